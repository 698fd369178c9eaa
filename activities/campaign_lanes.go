package activities

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/toolcache"
)

// MergeTaskInput.Lane: the steps of a speculative lane (SPEC 41). A lane
// merges its stack onto the previous lane's tip and keeps it on HoldRef
// (LaneMerge), then verifies that kept tip (LaneVerify) while other lanes
// verify theirs; a passing tip lands later by compare-and-swap (Land,
// LandOn), in queue order.
const (
	LaneMerge  = "merge"
	LaneVerify = "verify"
)

// laneRefPattern is a lane's ref: one per lane, its last segment names the
// lane's scratch clone, so lanes verify side by side on one worker.
var laneRefPattern = regexp.MustCompile(`^refs/ralph/campaigns/[A-Za-z0-9._-]+/lanes/[0-9]{1,9}$`)

// checkLane refuses lane inputs that do not fit together: the old inputs
// keep their meaning, and Onto (a base other than the head) is only a
// lane's merge, which never lands.
func checkLane(in MergeTaskInput) error {
	bad := func(msg string) error {
		return temporal.NewNonRetryableApplicationError("MergeTask: "+msg, ErrTypeBadRoundInput, nil)
	}
	switch in.Lane {
	case "":
		if in.Onto != "" || in.OntoRef != "" || in.Tip != "" {
			return bad("onto, ontoRef and tip are a lane's inputs (lane merge or verify)")
		}
		return nil
	case LaneMerge, LaneVerify:
	default:
		return bad(fmt.Sprintf("lane %q is neither %q nor %q", in.Lane, LaneMerge, LaneVerify))
	}
	if !laneRefPattern.MatchString(in.HoldRef) {
		return bad(fmt.Sprintf("a lane's holdRef %q is not refs/ralph/campaigns/<campaign>/lanes/<n>", in.HoldRef))
	}
	if in.Hold || in.Land != "" || in.VerifyHead {
		return bad("a lane's step neither holds for approval, lands (land it with land and landOn) nor verifies the head")
	}
	if in.Lane == LaneMerge && (in.Onto == "") != (in.OntoRef == "") {
		return bad("onto and ontoRef go together: the commit and the ref that keeps it")
	}
	if in.Lane == LaneVerify && (in.Tip == "" || in.OntoRef != "") {
		return bad("a lane's verify needs the tip kept on holdRef (and onto, for the record, without ontoRef)")
	}
	return nil
}

// mergeBase is what a step merges onto: the integration head, or a lane's
// Onto, fetched from the ref that keeps it (the previous lane's).
func (a *Activities) mergeBase(ctx context.Context, c *campaignGit, in MergeTaskInput, head string) (string, error) {
	if in.Onto == "" {
		return head, nil
	}
	got, err := a.git.FetchKept(ctx, c.scratch, c.line, in.OntoRef)
	if err != nil {
		return "", err
	}
	if got != in.Onto {
		return "", temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the lane's base %s is not on %s (it holds %q)", in.Onto, in.OntoRef, got), ErrTypeCampaignGit, nil)
	}
	return in.Onto, nil
}

// keepLane ends a lane's merge: the merged tip kept on the lane's ref for
// its verify and landing, on any worker.
func (a *Activities) keepLane(ctx context.Context, c *campaignGit, in MergeTaskInput, out MergeTaskOutput, base string) (MergeTaskOutput, error) {
	var err error
	if out.DiffStat, err = a.git.DiffStat(ctx, c.scratch, base, out.Tip); err != nil {
		return MergeTaskOutput{}, err
	}
	if err := a.git.Keep(ctx, c.scratch, c.line, in.HoldRef, out.Tip); err != nil {
		return MergeTaskOutput{}, err
	}
	out.Outcome = MergeHeld
	return out, nil
}

// verifyLane verifies the tip a lane's merge kept, in a scratch clone of
// the lane's own (lanes verify at once on one worker): held when it
// passes, red when not; it never moves the integration branch.
func (a *Activities) verifyLane(ctx context.Context, in MergeTaskInput) (MergeTaskOutput, error) {
	name := "lane-" + path.Base(in.HoldRef)
	lock, err := a.lockWorkspace(ctx, filepath.Join(campaignDir(in.Line.Campaign), name), func() {})
	if err != nil {
		return MergeTaskOutput{}, err
	}
	defer lock.release()
	c, err := a.campaignGit(ctx, in.Line, name)
	if err != nil {
		return MergeTaskOutput{}, err
	}
	defer c.remove(ctx)
	got, err := a.git.FetchKept(ctx, c.scratch, c.line, in.HoldRef)
	if err != nil {
		return MergeTaskOutput{}, err
	}
	if got != in.Tip {
		return MergeTaskOutput{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the lane's tip %s is not on %s (it holds %q)", in.Tip, in.HoldRef, got), ErrTypeCampaignGit, nil)
	}
	if err := a.git.CheckoutCommit(ctx, c.scratch, in.Tip, "the lane's tip"); err != nil {
		return MergeTaskOutput{}, campaignStepError(err)
	}
	out := MergeTaskOutput{Head: in.Onto, Tip: in.Tip, Merged: []MergedTask{}}
	// Warm from the campaign line's tool cache; what a passing verify wrote
	// waits on this worker for the lane's landing (landKeptLane), a red
	// one's is dropped: only a landed merge's verify may write the line.
	var cache *toolcache.Copy
	out.Verification, cache, err = a.verifyTreeWarm(ctx, c.scratch, in.VerifyCommand, toolcache.CampaignLine(in.Line.Campaign),
		a.protectedSets(in.ProtectedPaths))
	if err != nil || !out.Verification.Passed() {
		_ = cache.Remove()
	} else {
		a.laneCaches.park(in.Line.Campaign, in.HoldRef, cache)
	}
	if err != nil {
		return MergeTaskOutput{}, err
	}
	out.Outcome = MergeHeld
	if !out.Verification.Passed() {
		out.Outcome = MergeRed
	}
	return out, nil
}

// landKeptLane lands a kept tip (landKept); a lane's landing then makes
// the tool cache its verify wrote, when parked on this worker, the
// campaign line's.
func (a *Activities) landKeptLane(ctx context.Context, c *campaignGit, in MergeTaskInput, head string) (MergeTaskOutput, error) {
	out, err := a.landKept(ctx, c, in, head)
	if err != nil || out.Outcome != MergeLanded {
		return out, err
	}
	a.dropSpentRefs(ctx, c, in)
	if !laneRefPattern.MatchString(in.HoldRef) {
		return out, nil
	}
	if cache := a.laneCaches.landed(in.Line.Campaign, in.HoldRef); cache != nil {
		if st, cerr := cache.Commit(); cerr != nil {
			activity.GetLogger(ctx).Warn("Could not keep the lane verify's tool cache: the next verify starts from the last one", "error", cerr)
		} else {
			activity.GetLogger(ctx).Info("Tool cache committed", "line", toolcache.CampaignLine(in.Line.Campaign), "files", st.Files, "bytes", st.Bytes)
		}
	}
	return out, nil
}

// dropSpentRefs deletes, in the landing's own step, the queue's refs the
// landing spent (docs/git.md, "What is kept, and for how long"): a lane's landing
// the refs of every lane before it (each landed or discarded: lanes land
// in queue order), not its own, which a lane behind it may still be
// merging onto; a held merge's landing every held ref of its tasks. A
// failure leaves them for the next landing: the merge has landed.
func (a *Activities) dropSpentRefs(ctx context.Context, c *campaignGit, in MergeTaskInput) {
	dir := path.Dir(in.HoldRef) + "/"
	prefixes, spent := []string{dir}, func(string) bool { return true }
	if laneRefPattern.MatchString(in.HoldRef) {
		n, _ := strconv.Atoi(path.Base(in.HoldRef))
		spent = func(ref string) bool {
			k, err := strconv.Atoi(strings.TrimPrefix(ref, dir))
			return err == nil && k < n
		}
	} else if held := heldDir(in.Line.Campaign); strings.HasPrefix(in.HoldRef, held) {
		prefixes = prefixes[:0]
		for _, t := range in.Tasks {
			prefixes = append(prefixes, held+t.ID+"/")
		}
	} else {
		return
	}
	dropped, err := a.git.DropRefs(ctx, c.scratch, c.line, prefixes, spent)
	if err != nil {
		activity.GetLogger(ctx).Warn("Could not delete the queue's spent refs: the next landing tries again", "error", err)
		return
	}
	if len(dropped) > 0 {
		activity.GetLogger(ctx).Info("Spent queue refs deleted", "refs", len(dropped))
	}
}

// dropLanes deletes every lane ref the campaign left (the last landed
// lane's, and any a discarded lane's step kept after it was discarded).
func (a *Activities) dropLanes(ctx context.Context, c *campaignGit, campaign, head string) (MergeTaskOutput, error) {
	a.laneCaches.ended(campaign)
	lanes := gitws.CampaignRefPrefix + campaign + "/lanes/"
	if _, err := a.git.DropRefs(ctx, c.scratch, c.line, []string{lanes}, func(string) bool { return true }); err != nil {
		return MergeTaskOutput{}, err
	}
	return MergeTaskOutput{Outcome: MergeDropped, Head: head, Merged: []MergedTask{}}, nil
}

// heldDir is where a campaign keeps merges awaiting approval, a directory
// per task (the workflow's holdRef).
func heldDir(campaign string) string { return gitws.CampaignRefPrefix + campaign + "/held/" }

// laneCaches keeps each passing lane verify's tool cache copy on the worker
// that ran it until its lane lands (it becomes the line's) or a later lane
// of the campaign lands (it was discarded: removed). A landing on another
// worker finds none and the line stays as it was; a copy left by a
// campaign that ended goes with its DropLanes step on this worker, else
// after staleParked.
type laneCaches struct {
	mu     sync.Mutex
	parked map[string]parkedCache
}

type parkedCache struct {
	campaign string
	lane     int
	copy     *toolcache.Copy
	at       time.Time
}

// staleParked is how long a parked copy waits for its lane's landing:
// lanes land minutes after their verify, so one older was discarded by a
// campaign that landed nothing more here (its landing then keeps the
// line's cache as it was).
const staleParked = 6 * time.Hour

// sweep removes the parked copies past staleParked; under p.mu.
func (p *laneCaches) sweep() {
	for key, c := range p.parked {
		if time.Since(c.at) > staleParked {
			_ = c.copy.Remove()
			delete(p.parked, key)
		}
	}
}

// ended removes every copy the campaign parked here: it ended, no lane of
// it will land (MergeTaskInput.DropLanes).
func (p *laneCaches) ended(campaign string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, c := range p.parked {
		if c.campaign == campaign {
			_ = c.copy.Remove()
			delete(p.parked, key)
		}
	}
}

func (p *laneCaches) park(campaign, ref string, c *toolcache.Copy) {
	if c == nil {
		return
	}
	n, _ := strconv.Atoi(path.Base(ref))
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.parked == nil {
		p.parked = map[string]parkedCache{}
	}
	if old, ok := p.parked[campaign+" "+ref]; ok {
		_ = old.copy.Remove() // a retried verify's
	}
	p.sweep()
	p.parked[campaign+" "+ref] = parkedCache{campaign: campaign, lane: n, copy: c, at: time.Now()}
}

// landed takes the copy of the lane that landed and removes the copies of
// the campaign's earlier lanes (discarded, or landed elsewhere).
func (p *laneCaches) landed(campaign, ref string) *toolcache.Copy {
	n, _ := strconv.Atoi(path.Base(ref))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sweep()
	var got *toolcache.Copy
	for key, c := range p.parked {
		switch {
		case key == campaign+" "+ref:
			got = c.copy
			delete(p.parked, key)
		case c.campaign == campaign && c.lane < n:
			_ = c.copy.Remove()
			delete(p.parked, key)
		}
	}
	return got
}
