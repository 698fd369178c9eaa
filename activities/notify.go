package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/ralph-temporal/ralph/internal/runes"
)

// NotifyName is the activity that tells people about a run's event (docs/operators.md).
const NotifyName = "Notify"

// notifyPostTimeout bounds one POST; the workflow's retry policy does the rest.
const notifyPostTimeout = 10 * time.Second

// NotifyInput is one event of a run. It never carries the receiver's URL:
// that is a secret of the worker's configuration (RALPH_NOTIFY_URL).
type NotifyInput struct {
	Event      string `json:"event"`
	WorkflowID string `json:"workflowId"`
	RunID      string `json:"runId"`
	Round      int    `json:"round"`
	Status     string `json:"status"`
	// Text is the one line a person reads.
	Text string `json:"text"`
	// Seq tells apart repeats of an event in one round (a round's
	// deferrals each wait); 0 for the others.
	Seq int `json:"seq,omitempty"`
}

// notifyBody is what the receiver gets: a Slack- and Mattermost-compatible
// incoming-webhook body ("text") with the event's fields beside it.
type notifyBody struct {
	Text       string `json:"text"`
	Event      string `json:"event"`
	WorkflowID string `json:"workflowId"`
	RunID      string `json:"runId"`
	Round      int    `json:"round"`
	Status     string `json:"status"`
	URL        string `json:"url,omitempty"`
}

// Notify POSTs in to RALPH_NOTIFY_URL; with none configured it returns at
// once. A failure is retried by the workflow's policy; its message never
// holds the URL (a webhook URL is a credential).
func (a *Activities) Notify(ctx context.Context, in NotifyInput) error {
	if a.cfg.NotifyURL == "" {
		return nil
	}
	body := notifyBody{Text: webhookText(in.Text), Event: in.Event, WorkflowID: in.WorkflowID, RunID: in.RunID,
		Round: in.Round, Status: in.Status, URL: runURL(a.cfg.UIURL, activity.GetInfo(ctx).Namespace, in.WorkflowID, in.RunID)}
	raw, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode the notification: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, notifyPostTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(pctx, http.MethodPost, a.cfg.NotifyURL, bytes.NewReader(raw))
	if err != nil {
		return errors.New("RALPH_NOTIFY_URL is not a valid URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", NotifyKey(in))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("post the %s notification: %s", in.Event, postProblem(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post the %s notification: the receiver answered %s", in.Event, resp.Status)
	}
	return nil
}

// webhookText is text as Slack and Mattermost show it and never parse:
// '&', '<' and '>' escaped (their markup of mentions and links, <!channel>
// and <https://…|Approve>), and no control character.
func webhookText(s string) string {
	return htmlish.Replace(runes.Printable(s))
}

var htmlish = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// QuoteModelText is model or workspace text (a verify output, a summary)
// inside a notification's text: one line in a code span, so it reads as a
// quote, and neither Slack nor Mattermost makes a mention (@channel) or a
// link ([Approve](https://…)) of it; a backtick in it becomes ' so the
// quote cannot be closed early. The activity escapes '&', '<' and '>'.
func QuoteModelText(s string) string {
	return "`" + strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "`", "'") + "`"
}

// NotifyKey is one event's Idempotency-Key: a retried POST repeats it.
func NotifyKey(in NotifyInput) string {
	key := fmt.Sprintf("%s/%s/%s/%d", in.WorkflowID, in.RunID, in.Event, in.Round)
	if in.Seq > 0 {
		key += fmt.Sprintf("/%d", in.Seq)
	}
	return key
}

// postProblem is what went wrong without the URL (*url.Error names it).
func postProblem(err error) string {
	var ue *url.Error
	switch {
	case errors.As(err, &ue) && ue.Timeout():
		return "the receiver did not answer in time"
	case errors.As(err, &ue):
		return "the receiver could not be reached"
	}
	return "the request failed"
}

// runURL is the run's page in the Temporal UI ("" without RALPH_UI_URL).
func runURL(ui, namespace, workflowID, runID string) string {
	if ui == "" {
		return ""
	}
	return fmt.Sprintf("%s/namespaces/%s/workflows/%s/%s/history", strings.TrimRight(ui, "/"),
		url.PathEscape(namespace), url.PathEscape(workflowID), url.PathEscape(runID))
}
