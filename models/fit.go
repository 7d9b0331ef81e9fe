package models

// Fit says how a model fits a machine's memory.
type Fit string

// The fits, from best to worst.
const (
	FitInRAM     Fit = "fits"      // runs fully in RAM
	FitStreaming Fit = "streaming" // runs with its experts streamed from the SSD (the engine's stream mode)
	FitTooLarge  Fit = "too_large"
	FitUnknown   Fit = "unknown" // the entry does not say what it needs
)

// Classify says how e fits a machine with ram bytes of memory. Installed
// models without catalog figures are judged by their size.
func Classify(e Entry, ram uint64) Fit {
	rec, minimum := e.RAMRecommended, e.RAMMin
	if rec == 0 && e.Size > 0 {
		rec = uint64(e.Size) + uint64(e.Size)/8 + 2<<30 // weights, context and runtime
	}
	if minimum == 0 && rec != 0 {
		minimum = rec / 4
	}
	switch {
	case rec == 0 || ram == 0:
		return FitUnknown
	case ram >= rec:
		return FitInRAM
	case ram >= minimum:
		return FitStreaming
	default:
		return FitTooLarge
	}
}
