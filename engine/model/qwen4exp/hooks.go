package qwen4exp

// pleHistory is the length of the PLE convolution's history buffer: the
// last (ConvKernel-1)·Ngram inputs (the convolution is dilated by the
// n-gram size) of every HC·Embd channel.
func (hp *Hparams) pleHistory() int {
	return (hp.PLE.ConvKernel - 1) * hp.PLE.Ngram * hp.HC * hp.Embd
}
