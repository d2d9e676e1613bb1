package bench

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/tarfolder"
)

// Pool runs a bench's attempts on lane workers (lane bench --workers).
type Pool interface {
	// Pack stores what a worker on another machine needs of the suite (each
	// task's fixture folder, as PackFixture makes it) and sets each task's
	// FixtureBlob.
	Pack(ctx context.Context, s *Suite) error
	// Enqueue hands the attempts of b to the workers.
	Enqueue(ctx context.Context, b *record.Bench, todo []record.Attempt) error
	// Changed receives after the bench's attempts may have changed.
	Changed(ctx context.Context) <-chan struct{}
	// End records b, none of whose attempts is left to run, succeeded at
	// endedAt unless it has ended already (the worker that recorded its
	// last attempt records that too), and says whether it did.
	End(ctx context.Context, b *record.Bench, endedAt time.Time) (bool, error)
}

// followEvery is how often a bench of the pool reads its attempts when no
// change was announced, and tries again after a failed read.
const followEvery = 2 * time.Second

// enqueueFor bounds the enqueueing of a bench's attempts, which goes on
// after a Ctrl-C: a bench detached half enqueued would wait for a resume.
const enqueueFor = time.Minute

// dispatch enqueues the attempts and follows them until every one is done,
// or ctx ends: the bench then goes on without this process, which detaches.
// A database out of reach (restarting, the network down) ends nothing:
// the workers carry on without this process, which follows again once it
// can read.
func (r *runner) dispatch(ctx context.Context, todo []record.Attempt) (*record.Bench, error) {
	b := r.bench
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), enqueueFor)
	err := r.cfg.Pool.Enqueue(ectx, b, todo)
	cancel()
	if err != nil {
		return b, fmt.Errorf("bench %s: %w", b.ID, err) // the pool says what it could not enqueue
	}
	changed := r.cfg.Pool.Changed(ctx)
	tick := time.NewTicker(followEvery)
	defer tick.Stop()
	failing := false
	for {
		endedHere, err := r.follow(ctx, b)
		switch {
		case err == nil && b.Status == record.StatusSucceeded:
			if failing {
				r.prog.note(fmt.Sprintf("lane: bench %s: the database answers again", b.ID))
			}
			r.prog.finish()
			if endedHere {
				r.ended(ctx)
			}
			return b, nil
		case err != nil && ctx.Err() == nil && !failing:
			r.prog.note(fmt.Sprintf("lane: %v; trying again (the workers carry on)", err))
			failing = true
		case err == nil && failing:
			r.prog.note(fmt.Sprintf("lane: bench %s: the database answers again", b.ID))
			failing = false
		}
		select {
		case <-ctx.Done():
			r.prog.finish()
			return b, nil // detached: the workers carry on
		case <-changed:
			// Every event of every run notifies: read at most every
			// followGap, the changes in between coalesced.
			if !waitFor(ctx, followGap) {
				r.prog.finish()
				return b, nil
			}
		case <-tick.C:
		}
	}
}

// followGap is the least time between two reads of a pool bench's attempts
// prompted by notifications (measured: reading on each one cost the bench
// process 2 s of CPU over a 200-attempt suite, one read per 250 ms 0.3 s).
const followGap = 250 * time.Millisecond

// waitFor waits d, or less when ctx ends first (then it returns false).
func waitFor(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// follow reads the bench's attempts and shows them; once none is left to
// run, the bench has ended: the worker that recorded the last attempt
// recorded that too, except for a bench resumed with nothing left to run,
// which this process has just recorded running again, and now ends
// (endedHere).
func (r *runner) follow(ctx context.Context, b *record.Bench) (endedHere bool, err error) {
	as, err := r.cfg.Store.Attempts(ctx, b.ID)
	if err != nil {
		return false, err
	}
	c, final := countAttempts(as)
	r.prog.update(c)
	if !final {
		return false, nil
	}
	endedAt := b.StartedAt
	for _, a := range as {
		if a.EndedAt.After(endedAt) {
			endedAt = a.EndedAt // it ended when its last attempt did
		}
	}
	if endedHere, err = r.cfg.Pool.End(context.WithoutCancel(ctx), b, endedAt); err != nil {
		return false, err
	}
	b.Status, b.EndedAt = record.StatusSucceeded, endedAt
	return endedHere, nil
}

// note prints a line of its own above the progress line.
func (p *progress) note(line string) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.drawn {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.lastLen))
	}
	fmt.Fprintln(p.w, line)
	if p.tty && p.drawn {
		p.drawLocked()
	}
}

// countAttempts tallies attempts as the progress line shows them, and says
// whether none is left to run.
func countAttempts(as []record.Attempt) (c counts, final bool) {
	c.total = len(as)
	for _, a := range as {
		c.spent += a.CostUSD
		if a.Status == record.AttemptRunning {
			c.running++
		}
		c.add(a.Status)
	}
	return c, c.done == c.total
}

// PackFixture archives the folder dir as tar: files with their permission
// bits, folders, symlinks as they are; sorted and without times, so that
// the same folder gives the same bytes (and digest) on every machine.
func PackFixture(dir string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := tarfolder.Write(tw, dir, func(h *tar.Header, _ fs.FileInfo) { h.Format = tar.FormatPAX })
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("pack fixture %s: %w", dir, err)
	}
	return buf.Bytes(), nil
}

// unpackStored fills dir with the folder stored as blob digest (a
// fixture, a Harbor task); the caller's error says which.
func unpackStored(ctx context.Context, env AttemptEnv, digest, dir string) error {
	data, err := env.Blob(ctx, digest)
	if err != nil {
		return err
	}
	if err := UnpackFixture(data, dir); err != nil {
		return fmt.Errorf("stored copy %s: %w", digest, err)
	}
	return nil
}

// UnpackFixture extracts an archive of PackFixture into the folder dir. A
// name that would land outside dir is refused.
func UnpackFixture(data []byte, dir string) error {
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.FromSlash(strings.TrimSuffix(h.Name, "/"))
		if !filepath.IsLocal(name) {
			return fmt.Errorf("archive entry %q is outside the folder", h.Name)
		}
		target := filepath.Join(dir, name)
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, mode|0o700)
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, target)
		case tar.TypeReg:
			err = extractFile(target, tr, mode)
		}
		if err != nil {
			return err
		}
	}
}

func extractFile(path string, r io.Reader, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
