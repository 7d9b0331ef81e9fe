package models

import "github.com/strata-llm/strata/internal/sysmem"

// TotalRAM returns the machine's physical memory in bytes (0 if unknown).
func TotalRAM() uint64 { return sysmem.Total() }
