package codec

import (
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// DataConverter is the SDK's default data converter with every payload
// passed through c.
func DataConverter(c *Codec) converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}

// FailureConverter moves failure messages and stack traces into an encoded
// payload, so that an error text (which may quote a report or the objective)
// is encrypted like every other payload instead of stored in plaintext.
func FailureConverter(dc converter.DataConverter) converter.FailureConverter {
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter:          dc,
		EncodeCommonAttributes: true,
	})
}

// Load reads the key file at path and returns the codec over its keys.
func Load(path string) (*Codec, error) {
	keys, err := LoadKeyFile(path)
	if err != nil {
		return nil, err
	}
	return New(keys)
}

// Keys is the keyring the codec was built over.
func (c *Codec) Keys() *Keyring { return c.keys }

// String shows the key ids only.
func (c *Codec) String() string { return "codec.Codec{" + c.keys.String() + "}" }
