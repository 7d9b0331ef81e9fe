package models

// Fit says how a model fits a machine's memory.
type Fit string

// The fits, from best to worst. (Running a model larger than memory by
// streaming its experts from the SSD is not built yet, so a model either
// fits in RAM or is too large; RAMMin is not used until then.)
const (
	FitInRAM    Fit = "fits" // runs fully in RAM
	FitTooLarge Fit = "too_large"
	FitUnknown  Fit = "unknown" // the entry does not say what it needs
)

// Classify says how e fits a machine with ram bytes of memory. Installed
// models without catalog figures are judged by their size.
func Classify(e Entry, ram uint64) Fit {
	rec := e.RAMRecommended
	if rec == 0 && e.Size > 0 {
		rec = uint64(e.Size) + uint64(e.Size)/8 + 2<<30 // weights, context and runtime
	}
	switch {
	case rec == 0 || ram == 0:
		return FitUnknown
	case ram >= rec:
		return FitInRAM
	default:
		return FitTooLarge
	}
}
