package tokenizer

import (
	"fmt"
	"math"

	"github.com/strata-llm/strata/engine/gguf"
)

// Metadata keys read by FromGGUF.
const (
	keyModel      = "tokenizer.ggml.model"
	keyPre        = "tokenizer.ggml.pre"
	keyTokens     = "tokenizer.ggml.tokens"
	keyTokenTypes = "tokenizer.ggml.token_type"
	keyMerges     = "tokenizer.ggml.merges"
	keyAddBOS     = "tokenizer.ggml.add_bos_token"
	keyAddEOS     = "tokenizer.ggml.add_eos_token"
)

// FromGGUF builds the tokenizer described by a GGUF file's tokenizer.ggml.*
// metadata.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	var cfg Config
	var ok bool
	if _, present := f.Get(keyModel); !present {
		return nil, fmt.Errorf("tokenizer: %s is missing", keyModel)
	}
	if cfg.Model, ok = f.String(keyModel); !ok {
		return nil, fmt.Errorf("tokenizer: %s is not a string", keyModel)
	}
	if cfg.Model != "gpt2" {
		return nil, fmt.Errorf("tokenizer: %s = %q is not supported (only byte-level BPE, \"gpt2\")", keyModel, cfg.Model)
	}
	if _, present := f.Get(keyPre); present {
		if cfg.Pre, ok = f.String(keyPre); !ok {
			return nil, fmt.Errorf("tokenizer: %s is not a string", keyPre)
		}
	}
	if cfg.Tokens, ok = f.Strings(keyTokens); !ok {
		return nil, fmt.Errorf("tokenizer: %s is missing or not a string array", keyTokens)
	}
	if _, present := f.Get(keyTokenTypes); present {
		types, ok := f.Ints(keyTokenTypes)
		if !ok {
			return nil, fmt.Errorf("tokenizer: %s is not an integer array", keyTokenTypes)
		}
		cfg.TokenTypes = make([]int32, len(types))
		for i, v := range types {
			if v < math.MinInt32 || v > math.MaxInt32 {
				return nil, fmt.Errorf("tokenizer: %s[%d] = %d is out of range", keyTokenTypes, i, v)
			}
			cfg.TokenTypes[i] = int32(v)
		}
	}
	if cfg.Merges, ok = f.Strings(keyMerges); !ok {
		return nil, fmt.Errorf("tokenizer: %s is missing or not a string array", keyMerges)
	}
	ids := []struct {
		key string
		dst **int32
	}{
		{"tokenizer.ggml.bos_token_id", &cfg.BOS},
		{"tokenizer.ggml.eos_token_id", &cfg.EOS},
		{"tokenizer.ggml.eot_token_id", &cfg.EOT},
		{"tokenizer.ggml.eom_token_id", &cfg.EOM},
		{"tokenizer.ggml.padding_token_id", &cfg.PAD},
	}
	for _, id := range ids {
		if _, present := f.Get(id.key); !present {
			continue
		}
		v, ok := f.Uint(id.key)
		if !ok || v > math.MaxInt32 {
			return nil, fmt.Errorf("tokenizer: %s is not a token id", id.key)
		}
		i := int32(v)
		*id.dst = &i
	}
	for _, b := range []struct {
		key string
		dst **bool
	}{{keyAddBOS, &cfg.AddBOS}, {keyAddEOS, &cfg.AddEOS}} {
		if _, present := f.Get(b.key); !present {
			continue
		}
		v, ok := f.Bool(b.key)
		if !ok {
			return nil, fmt.Errorf("tokenizer: %s is not a bool", b.key)
		}
		*b.dst = &v
	}
	return New(cfg)
}
