package workflows

import "time"

// What the replay tests (package workflows_test, which also registers the
// campaign's workflow and so cannot be this package) need of its insides.

// MinRoundTime points at the budget's time floor, which a replay test
// changes to show that the replay check catches it.
var MinRoundTime = &minRoundTime

// MinRoundTimeDefault is the floor the code ships with.
const MinRoundTimeDefault = 10 * time.Second
