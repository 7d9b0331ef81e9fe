//go:build !linux

package download_test

import "testing"

func mountTmpfs(t *testing.T, size string) string {
	t.Skip("tmpfs mounts are only tried on Linux")
	return ""
}
