package api

import (
	"context"
	"encoding/json"

	"github.com/strata-llm/strata/api/protocol"
	"github.com/strata-llm/strata/internal/settings"
)

// SettingsStore serves settings.get and settings.set from the settings
// store the settings window uses: a patch is applied to the current
// settings, every field validated (failures are bad_request naming the
// field), then persisted and announced to the store's subscribers, which
// apply it live.
func SettingsStore(st *settings.Store) Settings { return settingsStore{st} }

type settingsStore struct{ st *settings.Store }

func (a settingsStore) Get() ([]byte, error) { return json.Marshal(a.st.Get()) }

func (a settingsStore) Set(ctx context.Context, patch []byte) ([]byte, error) {
	s, err := a.st.Get().Patch(patch)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeBadRequest, "%v", err)
	}
	if err := a.st.Set(s); err != nil {
		return nil, err
	}
	return json.Marshal(s)
}
