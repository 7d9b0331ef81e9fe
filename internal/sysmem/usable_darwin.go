package sysmem

import "golang.org/x/sys/unix"

// Usable returns the memory this process may still take, in bytes (0 if
// unknown): free, speculative and purgeable pages plus the file-backed
// pageable ones (vm.page_*_count sysctls; inactive pages have no sysctl of
// their own, and file-backed pageable pages are where most of them are),
// which macOS hands to a process that asks before it compresses or swaps.
func Usable() uint64 {
	page, err := unix.SysctlUint32("vm.pagesize")
	if err != nil || page == 0 {
		return 0
	}
	var pages uint64
	for _, name := range []string{"vm.page_free_count", "vm.page_speculative_count",
		"vm.page_purgeable_count", "vm.page_pageable_external_count"} {
		if n, err := unix.SysctlUint32(name); err == nil {
			pages += uint64(n)
		}
	}
	return pages * uint64(page)
}
