// Package tokenizer implements the byte-level BPE tokenizer of GGUF files
// (tokenizer.ggml.model = "gpt2") exactly as llama.cpp's llama_tokenize does
// it: special tokens are split out first, the text is pre-tokenized with the
// regular expression of the file's pre-tokenizer (qwen2, qwen35, llama3 or
// gpt2 families), each word is byte-encoded and merged by BPE rank, and BOS/EOS
// are added as the file asks. Decoding maps tokens back to bytes and can
// stream valid UTF-8 through a StreamDecoder.
//
// A Tokenizer is immutable after New and safe for concurrent use.
package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Token types as stored in tokenizer.ggml.token_type (llama_token_type).
const (
	TypeUndefined   = 0
	TypeNormal      = 1
	TypeUnknown     = 2
	TypeControl     = 3
	TypeUserDefined = 4
	TypeUnused      = 5
	TypeByte        = 6
)

// Token attributes (llama_token_attr), derived from the token types and from
// llama.cpp's text-based fix-ups.
const (
	attrUnknown     uint32 = 1 << 0
	attrUnused      uint32 = 1 << 1
	attrNormal      uint32 = 1 << 2
	attrControl     uint32 = 1 << 3
	attrUserDefined uint32 = 1 << 4
	attrByte        uint32 = 1 << 5
)

// Config holds the vocabulary data of a GGUF file in plain form. Zero values
// (nil) of the optional fields mean "key absent", as in a GGUF file.
type Config struct {
	Model      string   // tokenizer.ggml.model; must be "gpt2"
	Pre        string   // tokenizer.ggml.pre
	Tokens     []string // tokenizer.ggml.tokens
	TokenTypes []int32  // tokenizer.ggml.token_type; nil means all normal
	Merges     []string // tokenizer.ggml.merges, "left right", highest priority first

	// Special token ids; nil means the key is absent, and llama.cpp's
	// defaults for BPE vocabularies apply.
	BOS, EOS, EOT, EOM, PAD *int32

	// AddBOS and AddEOS are tokenizer.ggml.add_bos_token / add_eos_token;
	// nil means absent (the pre-tokenizer's default applies).
	AddBOS, AddEOS *bool
}

// Tokenizer is a byte-level BPE tokenizer. Build one with New or FromGGUF.
type Tokenizer struct {
	pre       preKind
	ignoreMrg bool // llama3: a word that is a whole token skips BPE

	texts    []string         // token texts ("[EMPTY_i]" for empty ones)
	attrs    []uint32         // token attributes
	toID     map[string]int32 // token text -> id
	pieces   [][]byte         // decoded bytes of each token (token_to_piece, special=true)
	special  []int32          // control/user-defined/unknown tokens, longest text first
	eog      map[int32]bool   // end-of-generation tokens
	bos, eos int32            // -1 if none
	addBOS   bool
	addEOS   bool

	// BPE tables. Strings that take part in merges are interned; a pair of
	// interned ids maps to its rank and the id of the merged string.
	pairs      map[uint64]merge
	internText []string // interned id -> string (byte-level encoded)
	internTok  []int32  // interned id -> token id, -1 if not a token
	byteSym    [256]int32
	byteTok    [256]int32 // token whose text is the single raw byte b, -1 if none
}

type merge struct {
	rank   int32
	result int32 // interned id of left+right
}

// preKind selects the pre-tokenizer split.
type preKind int

const (
	preQwen2 preKind = iota
	preQwen35
	preLlama3
	preGPT2
)

// preTypes maps tokenizer.ggml.pre values to llama.cpp's pre-tokenizer types
// whose split this package implements (src/llama-vocab.cpp).
var preTypes = map[string]struct {
	kind      preKind
	ignoreMrg bool
	addBOS    bool
	noBOS     bool // the default BOS id is dropped (chatglm)
}{
	"qwen2": {kind: preQwen2}, "deepseek-r1-qwen": {kind: preQwen2}, "kormo": {kind: preQwen2},
	"f2llmv2": {kind: preQwen2}, "megrez": {kind: preQwen2}, "stablelm2": {kind: preQwen2},
	"hunyuan": {kind: preQwen2}, "solar-open": {kind: preQwen2}, "grok-2": {kind: preQwen2},

	"qwen35": {kind: preQwen35},

	"llama3": {kind: preLlama3, ignoreMrg: true, addBOS: true}, "llama-v3": {kind: preLlama3, ignoreMrg: true, addBOS: true},
	"llama-bpe": {kind: preLlama3, ignoreMrg: true, addBOS: true}, "falcon3": {kind: preLlama3, ignoreMrg: true, addBOS: true},
	"falcon-h1": {kind: preLlama3, ignoreMrg: true, addBOS: true}, "pixtral": {kind: preLlama3, ignoreMrg: true, addBOS: true},
	"midm-2.0": {kind: preLlama3, ignoreMrg: true, addBOS: true}, "lfm2": {kind: preLlama3, ignoreMrg: true, addBOS: true},
	"jina-v5-nano": {kind: preLlama3, ignoreMrg: true, addBOS: true},
	"dbrx":         {kind: preLlama3}, "smaug-bpe": {kind: preLlama3},
	"glm4": {kind: preLlama3, noBOS: true}, "chatglm-bpe": {kind: preLlama3, noBOS: true},

	"gpt-2": {kind: preGPT2}, "phi-2": {kind: preGPT2}, "jina-es": {kind: preGPT2}, "jina-de": {kind: preGPT2},
	"gigachat": {kind: preGPT2}, "jina-v2-es": {kind: preGPT2}, "jina-v2-de": {kind: preGPT2},
	"a.x-4.0": {kind: preGPT2}, "mellum": {kind: preGPT2}, "modern-bert": {kind: preGPT2},
	"exaone4": {kind: preGPT2}, "mpt": {kind: preGPT2}, "olmo": {kind: preGPT2}, "jais": {kind: preGPT2},
	"trillion": {kind: preGPT2}, "granite-docling": {kind: preGPT2},
}

// New builds a tokenizer from plain vocabulary data, checking it the way
// llama.cpp's vocabulary loader does (and a little more strictly: ids out of
// range and malformed merges are errors rather than warnings).
func New(cfg Config) (*Tokenizer, error) {
	if cfg.Model != "gpt2" {
		if cfg.Model == "" {
			return nil, errors.New("tokenizer: tokenizer.ggml.model is missing")
		}
		return nil, fmt.Errorf("tokenizer: model %q is not supported (only byte-level BPE, \"gpt2\")", cfg.Model)
	}
	pt, ok := preTypes[cfg.Pre]
	if !ok {
		if cfg.Pre == "" {
			return nil, errors.New("tokenizer: tokenizer.ggml.pre is missing (the default pre-tokenizer is not supported)")
		}
		return nil, fmt.Errorf("tokenizer: pre-tokenizer %q is not supported", cfg.Pre)
	}
	n := len(cfg.Tokens)
	if n == 0 {
		return nil, errors.New("tokenizer: the vocabulary has no tokens")
	}
	if n > 1<<30 {
		return nil, fmt.Errorf("tokenizer: %d tokens is too many", n)
	}
	if cfg.TokenTypes != nil && len(cfg.TokenTypes) < n {
		return nil, fmt.Errorf("tokenizer: %d token types for %d tokens", len(cfg.TokenTypes), n)
	}

	t := &Tokenizer{
		pre:       pt.kind,
		ignoreMrg: pt.ignoreMrg,
		texts:     make([]string, n),
		attrs:     make([]uint32, n),
		toID:      make(map[string]int32, n),
	}
	for i, s := range cfg.Tokens {
		if s == "" {
			s = fmt.Sprintf("[EMPTY_%d]", i)
		}
		if j, dup := t.toID[s]; dup {
			return nil, fmt.Errorf("tokenizer: tokens %d and %d have the same text %q", j, i, s)
		}
		t.toID[s] = int32(i)
		t.texts[i] = s
		t.attrs[i] = attrNormal
		if cfg.TokenTypes != nil {
			t.attrs[i] = attrOfType(cfg.TokenTypes[i])
		}
	}

	for _, id := range []struct {
		name string
		p    *int32
	}{{"bos", cfg.BOS}, {"eos", cfg.EOS}, {"eot", cfg.EOT}, {"eom", cfg.EOM}, {"padding", cfg.PAD}} {
		if id.p != nil && (*id.p < 0 || int(*id.p) >= n) {
			return nil, fmt.Errorf("tokenizer: %s token id %d is outside the vocabulary (%d tokens)", id.name, *id.p, n)
		}
	}
	// llama.cpp's defaults for BPE: BOS and EOS are token 11 when the file
	// does not name them (and 11 exists).
	def := func(v *int32, d int32) int32 {
		if v != nil {
			return *v
		}
		if int(d) >= n {
			return -1
		}
		return d
	}
	bosDefault, eosDefault := int32(11), int32(11)
	if pt.noBOS {
		bosDefault = -1
	}
	t.bos = def(cfg.BOS, bosDefault)
	t.eos = def(cfg.EOS, eosDefault)
	eot := def(cfg.EOT, -1)
	eom := def(cfg.EOM, -1)

	t.addBOS = pt.addBOS
	if cfg.AddBOS != nil {
		t.addBOS = *cfg.AddBOS
	}
	if cfg.AddEOS != nil {
		t.addEOS = *cfg.AddEOS
	}
	if t.addBOS && t.bos < 0 {
		return nil, errors.New("tokenizer: add_bos_token is set but there is no BOS token")
	}
	if t.addEOS && t.eos < 0 {
		return nil, errors.New("tokenizer: add_eos_token is set but there is no EOS token")
	}

	t.fixSpecial(eot, eom)
	if err := t.buildMerges(cfg.Merges); err != nil {
		return nil, err
	}
	t.buildPieces()
	return t, nil
}

func attrOfType(tt int32) uint32 {
	switch tt {
	case TypeUnknown:
		return attrUnknown
	case TypeUnused:
		return attrUnused
	case TypeNormal:
		return attrNormal
	case TypeControl:
		return attrControl
	case TypeUserDefined:
		return attrUserDefined
	case TypeByte:
		return attrByte
	}
	return 0 // undefined
}

// Token texts llama.cpp recognises (llama_vocab::impl::load).
var (
	eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
		"<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}
	eomTexts    = []string{"<|eom_id|>"}
	fimPreTexts = []string{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>",
		"▁<PRE>", "<|code_prefix|>", "<|prefix|>"}
	fimSufTexts = []string{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>",
		"▁<SUF>", "<|code_suffix|>", "<|suffix|>"}
	fimMidTexts = []string{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>",
		"▁<MID>", "<|code_middle|>", "<|middle|>"}
	fimPadTexts = []string{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}
	fimRepTexts = []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}
	fimSepTexts = []string{"<|file_sep|>"}
	eogTexts    = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
		"<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]",
		"[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
		"<｜end▁of▁sentence｜>", "[e~["}
	alwaysRendered = []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}
)

// fixSpecial mirrors llama.cpp's text-based detection of EOT/EOM/FIM tokens,
// the control attribute it forces on them, the end-of-generation set and the
// special-token cache used to split text. llama.cpp walks an unordered map
// here; where its choice would depend on that order (several candidates for
// one role), the lowest id wins.
func (t *Tokenizer) fixSpecial(eot, eom int32) {
	fimPad, fimRep, fimSep := int32(-1), int32(-1), int32(-1)
	fimPre, fimSuf, fimMid := int32(-1), int32(-1), int32(-1)
	detect := func(id *int32, texts []string) {
		if *id >= 0 {
			return
		}
		for i, s := range t.texts {
			if slices.Contains(texts, s) {
				*id = int32(i)
				t.attrs[i] |= attrControl
				return
			}
		}
	}
	detect(&eot, eotTexts)
	detect(&eom, eomTexts)
	detect(&fimPre, fimPreTexts)
	detect(&fimSuf, fimSufTexts)
	detect(&fimMid, fimMidTexts)
	detect(&fimPad, fimPadTexts)
	detect(&fimRep, fimRepTexts)
	detect(&fimSep, fimSepTexts)

	for i, s := range t.texts {
		if t.attrs[i]&attrControl != 0 && strings.Contains(s, "unused") {
			t.attrs[i] |= attrUnused
		}
	}

	t.eog = make(map[int32]bool)
	for _, id := range []int32{fimPad, fimRep, fimSep} {
		if id >= 0 {
			t.eog[id] = true
		}
	}
	for i, s := range t.texts {
		if slices.Contains(eogTexts, s) {
			t.eog[int32(i)] = true
			t.attrs[i] |= attrControl
		}
		if slices.Contains(alwaysRendered, s) {
			t.attrs[i] = attrUserDefined
		}
	}
	for _, id := range []int32{t.eos, eot, eom} {
		if id >= 0 {
			t.eog[id] = true
		}
	}
	// o200k_harmony / solar-open: "<|end|>" is not an end of generation.
	has := func(s string) (int32, bool) {
		for id := range t.eog {
			if t.texts[id] == s {
				return id, true
			}
		}
		return -1, false
	}
	_, ret := has("<|return|>")
	_, call := has("<|call|>")
	_, calls := has("<|calls|>")
	_, flush := has("<|flush|>")
	if end, ok := has("<|end|>"); ok && ((ret && (call || calls)) || ((call || calls) && flush)) {
		delete(t.eog, end)
		t.attrs[end] = attrUserDefined
	}
	// gemma4 / paddleocr: "</s>" is not an end of generation.
	if _, ok := has("<|tool_response>"); ok {
		if s, ok := has("</s>"); ok {
			delete(t.eog, s)
			t.attrs[s] = attrNormal
		}
	}

	for i := range t.texts {
		if t.attrs[i]&(attrControl|attrUserDefined|attrUnknown) != 0 {
			t.special = append(t.special, int32(i))
		}
	}
	// Longest text first; llama.cpp's std::sort leaves ties in an
	// unspecified order, here they keep id order.
	slices.SortStableFunc(t.special, func(a, b int32) int {
		return len(t.texts[b]) - len(t.texts[a])
	})
}

// NVocab returns the number of tokens in the vocabulary.
func (t *Tokenizer) NVocab() int { return len(t.texts) }

// BOS returns the beginning-of-sequence token, or -1 if there is none.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS returns the end-of-sequence token, or -1 if there is none.
func (t *Tokenizer) EOS() int32 { return t.eos }

// BOSText returns the text of the BOS token ("" if none), as chat templates
// receive it in bos_token.
func (t *Tokenizer) BOSText() string {
	if t.bos < 0 {
		return ""
	}
	return string(t.pieces[t.bos])
}

// EOSText returns the text of the EOS token ("" if none).
func (t *Tokenizer) EOSText() string {
	if t.eos < 0 {
		return ""
	}
	return string(t.pieces[t.eos])
}

// AddBOS reports whether Encode with addSpecial prepends BOS.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports whether Encode with addSpecial appends EOS.
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// IsEOG reports whether id ends generation: EOS, EOT, EOM and the tokens
// llama.cpp recognises by their text (<|im_end|>, <|endoftext|>, ...).
func (t *Tokenizer) IsEOG(id int32) bool { return t.eog[id] }

// EOG returns the end-of-generation tokens in increasing order.
func (t *Tokenizer) EOG() []int32 {
	ids := make([]int32, 0, len(t.eog))
	for id := range t.eog {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// IsControl reports whether id is a control token (rendered as its text by
// TokenBytes, matched in text only when Encode parses special tokens).
func (t *Tokenizer) IsControl(id int32) bool {
	return id >= 0 && int(id) < len(t.attrs) && t.attrs[id]&attrControl != 0
}

// TokenText returns the stored text of a token (byte-level encoded for
// normal tokens), or "" for an id outside the vocabulary.
func (t *Tokenizer) TokenText(id int32) string {
	if id < 0 || int(id) >= len(t.texts) {
		return ""
	}
	return t.texts[id]
}

// ID returns the token whose stored text is s.
func (t *Tokenizer) ID(s string) (int32, bool) {
	id, ok := t.toID[s]
	return id, ok
}
