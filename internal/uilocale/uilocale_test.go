package uilocale

import (
	"maps"
	"testing"
)

func TestQuiet(t *testing.T) {
	for _, tc := range []struct {
		env, want map[string]string
	}{
		{map[string]string{"LANG": "C.UTF-8"}, map[string]string{"LANG": "C"}},
		{map[string]string{"LC_ALL": "C.utf8", "LANG": "de_DE.UTF-8"}, map[string]string{"LC_ALL": "C", "LANG": "de_DE.UTF-8"}},
		{map[string]string{"LANG": "POSIX.UTF-8", "LANGUAGE": "C.UTF-8"}, map[string]string{"LANG": "C", "LANGUAGE": "C.UTF-8"}},
		{map[string]string{"LANG": "C"}, map[string]string{"LANG": "C"}},
		{map[string]string{"LANG": "en_GB.UTF-8"}, map[string]string{"LANG": "en_GB.UTF-8"}},
		{map[string]string{"LANG": "en_GB.UTF-8", "LANGUAGE": "C.UTF-8:fr"}, map[string]string{"LANG": "en_GB.UTF-8", "LANGUAGE": "fr"}},
		{map[string]string{"LANG": "en_GB.UTF-8", "LANGUAGE": "C.UTF-8"}, map[string]string{"LANG": "en_GB.UTF-8"}},
		{map[string]string{}, map[string]string{}},
	} {
		env := maps.Clone(tc.env)
		saved := quiet(func(k string) (string, bool) { v, ok := env[k]; return v, ok },
			func(k, v string, set bool) {
				if set {
					env[k] = v
				} else {
					delete(env, k)
				}
			})
		if !maps.Equal(env, tc.want) {
			t.Errorf("%v: became %v, want %v", tc.env, env, tc.want)
		}
		for _, s := range saved {
			if s.set {
				env[s.key] = s.value
			} else {
				delete(env, s.key)
			}
		}
		if !maps.Equal(env, tc.env) {
			t.Errorf("%v: restored to %v", tc.env, env)
		}
	}
}
