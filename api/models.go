package api

import (
	"context"
	"errors"
	"fmt"

	"github.com/strata-llm/strata/api/protocol"
	"github.com/strata-llm/strata/models"
)

// ErrPullCancelled is the cause models.cancel_pull cancels a pull's
// context with; any other cause (a disconnect, shutdown) only pauses the
// download, so it resumes later.
var ErrPullCancelled = errors.New("download cancelled by the client")

// ModelManager serves the models.* operations from the model manager.
func ModelManager(m *models.Manager) Models { return modelManager{m} }

type modelManager struct{ m *models.Manager }

// modelErr gives the manager's errors their protocol codes.
func modelErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, models.ErrBadName), errors.Is(err, models.ErrInstalled), errors.Is(err, models.ErrInvalidGGUF):
		return protocol.Errorf(protocol.CodeBadRequest, "%v", err)
	case errors.Is(err, models.ErrNotInstalled), errors.Is(err, models.ErrNoPull), errors.Is(err, models.ErrUnknownRef):
		return protocol.Errorf(protocol.CodeNotFound, "%v", err)
	case errors.Is(err, models.ErrCancelled), errors.Is(err, models.ErrPaused):
		return protocol.Errorf(protocol.CodeCancelled, "%v", err)
	}
	return err
}

func (a modelManager) List(ctx context.Context) ([]protocol.ModelEntry, error) {
	var out []protocol.ModelEntry
	for _, e := range a.m.List() {
		size := e.Size
		if size == 0 {
			size = e.ApproxSize
		}
		out = append(out, protocol.ModelEntry{
			Name:        e.Name,
			Description: e.Description,
			Arch:        e.Arch,
			Quant:       e.Quant,
			SizeBytes:   size,
			Installed:   e.State == models.StateInstalled,
			Verified:    e.Verified,
			Path:        e.Path,
		})
	}
	return out, nil
}

func (a modelManager) Path(ctx context.Context, name string) (string, error) {
	p, err := a.m.Path(name)
	return p, modelErr(err)
}

func (a modelManager) Delete(ctx context.Context, name string) error {
	return modelErr(a.m.Delete(name))
}

// Pull starts the download and relays its events until it ends. If ctx
// ends first the download is cancelled (cause ErrPullCancelled) or paused.
func (a modelManager) Pull(ctx context.Context, ref string, progress func(protocol.PullProgress)) error {
	sctx, stop := context.WithCancel(context.Background())
	defer stop()
	events := a.m.Subscribe(sctx) // before starting, so no event is missed
	name, err := a.m.Pull(ctx, ref)
	if err != nil {
		return modelErr(err)
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return fmt.Errorf("pull %s: event stream ended", name)
			}
			if ev.Name != name {
				continue
			}
			phase := protocol.PhaseDownloading
			switch ev.Phase {
			case models.PhaseVerifying:
				phase = protocol.PhaseVerifying
			case models.PhaseDone:
				phase = protocol.PhaseDone
			}
			progress(protocol.PullProgress{Phase: phase, BytesDone: ev.Done, BytesTotal: ev.Total, Rate: ev.Rate, ETASeconds: ev.ETASeconds})
			switch ev.Phase {
			case models.PhaseDone:
				return nil
			case models.PhaseFailed:
				return modelErr(fmt.Errorf("pull %s: %s", name, ev.Error))
			case models.PhaseCancelled, models.PhasePaused:
				return protocol.Errorf(protocol.CodeCancelled, "download of %s %s", name, ev.Phase)
			}
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), ErrPullCancelled) {
				err = a.m.Cancel(name)
			} else {
				err = a.m.Pause(name)
			}
			if err != nil && !errors.Is(err, models.ErrNoPull) {
				return modelErr(err)
			}
			return protocol.Errorf(protocol.CodeCancelled, "download of %s stopped: %v", name, context.Cause(ctx))
		}
	}
}
