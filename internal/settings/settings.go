// Package settings holds Strata's user settings: one typed struct shared by
// the settings window and the API's settings.get/settings.set, with each
// knob's default, plain-language explanation and validation, and a Store
// that persists it atomically as JSON and tells subscribers about changes
// so they apply live.
package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Settings are all user settings. The zero value is not valid; start from
// Defaults. Settings holds only values, so copies are independent.
type Settings struct {
	// Model is the installed model (a models.Manager name) the engine
	// loads; "" means the built-in demo model. The models window and the
	// API's models.select set it.
	Model string `json:"model"`

	Speculation Speculation `json:"speculation"`
	Routing     Routing     `json:"routing"`
	Memory      Memory      `json:"memory"`
	API         API         `json:"api"`
	Browser     Browser     `json:"browser"`
	Advanced    Advanced    `json:"advanced"`
}

// Browser configures which web pages and browser extensions may use the
// API (they still need the token).
type Browser struct {
	// AllowedOrigins are exact origins: "https://app.example",
	// "http://localhost:3000", "chrome-extension://<id>". Empty: no page.
	AllowedOrigins Origins `json:"allowed_origins"`
}

// Origins is a list of origins, a JSON array of strings. It is held as
// one string so that Settings stays a comparable value type.
type Origins struct{ joined string }

// NewOrigins returns the list of os.
func NewOrigins(os ...string) Origins { return Origins{strings.Join(os, "\n")} }

// List returns the origins.
func (o Origins) List() []string {
	if o.joined == "" {
		return nil
	}
	return strings.Split(o.joined, "\n")
}

// MarshalJSON writes an array.
func (o Origins) MarshalJSON() ([]byte, error) {
	l := o.List()
	if l == nil {
		l = []string{}
	}
	return json.Marshal(l)
}

// UnmarshalJSON reads an array of strings (null: empty).
func (o *Origins) UnmarshalJSON(b []byte) error {
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return errors.New("allowed_origins: want an array of strings")
	}
	for _, x := range l {
		if strings.ContainsRune(x, '\n') {
			return errors.New("allowed_origins: an origin cannot hold a line break")
		}
	}
	*o = NewOrigins(l...)
	return nil
}

// Bounds of Browser.AllowedOrigins.
const (
	MaxOrigins   = 32
	MaxOriginLen = 200
)

// BrowserRisk is the sentence the settings window shows beside the list.
const BrowserRisk = "A web page or browser extension listed here can use the model and change these settings " +
	"whenever it has the API token, so list only sites and extensions you trust."

// CheckOrigin validates one allowed origin: scheme://host[:port] for http
// and https, or an extension's scheme and id, with no path, query or
// wildcard. It returns the origin as browsers send it (lower case).
func CheckOrigin(o string) (string, error) {
	if o == "" || len(o) > MaxOriginLen {
		return "", fmt.Errorf("an origin must be 1 to %d characters", MaxOriginLen)
	}
	scheme, rest, ok := strings.Cut(o, "://")
	if !ok || rest == "" {
		return "", fmt.Errorf("%q: want scheme://host, e.g. https://app.example or chrome-extension://ID", o)
	}
	scheme = strings.ToLower(scheme)
	switch scheme {
	case "http", "https", "chrome-extension", "moz-extension", "safari-web-extension":
	default:
		return "", fmt.Errorf("%q: scheme %s is not allowed (http, https or a browser extension's)", o, scheme)
	}
	for _, r := range rest {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-_:[]", r)
		if !ok {
			return "", fmt.Errorf("%q: only a host and port may follow the scheme (no path, query or wildcard)", o)
		}
	}
	return scheme + "://" + strings.ToLower(rest), nil
}

// Speculation configures speculative decoding (drafting several tokens and
// checking them in one step).
type Speculation struct {
	Enabled        bool    `json:"enabled"`
	AutoDepth      bool    `json:"auto_depth"` // SpecGate picks the draft length per step
	MaxDraftTokens int     `json:"max_draft_tokens"`
	MinDraftProb   float64 `json:"min_draft_probability"`
	PromptLookup   bool    `json:"prompt_lookup"`
	MTP            bool    `json:"mtp"` // the model's own multi-token-prediction head, where its file has one
}

// Routing configures cache-aware expert routing (MoCE).
type Routing struct {
	Enabled       bool    `json:"enabled"`
	Strength      float64 `json:"strength"`        // λ: how much a cached expert's score is raised
	ProtectedTop  int     `json:"protected_ranks"` // the best-ranked experts that are never replaced
	MaxRankWindow int     `json:"max_rank_window"` // M: a cached expert must rank inside the true top-M
	AlwaysKept    int     `json:"always_kept"`     // J: the true top-J experts are always used
}

// Memory configures what stays in memory.
type Memory struct {
	ExpertCacheGB     float64 `json:"expert_cache_gb"`     // 0: automatic, from the memory this process may use
	LearnUsage        bool    `json:"learn_usage"`         // keep a history of which experts are used, to warm the cache
	KeepLoadedMinutes int     `json:"keep_loaded_minutes"` // 0: unload at once; -1: forever
}

// API configures the local API server.
type API struct {
	Port         int  `json:"port"`
	AllowNetwork bool `json:"allow_network"` // listen on all interfaces, not only this computer
}

// Advanced holds knobs most people never change.
type Advanced struct {
	Threads       int `json:"threads"`        // 0: automatic (one per physical core)
	ContextLength int `json:"context_length"` // 0: automatic (the model's, at most 4096)
	// Backend chooses what runs the model: BackendAuto (the Metal GPU on
	// a Mac whose GPU passed the kernel selftest, else the CPU), BackendCPU
	// or BackendMetal (the GPU, still only after its selftest passed).
	Backend Backend `json:"backend"`
}

// Backend is the advanced.backend choice.
type Backend string

// The advanced.backend choices.
const (
	BackendAuto  Backend = "auto"
	BackendCPU   Backend = "cpu"
	BackendMetal Backend = "metal"
)

// Default values.
const (
	DefaultPort              = 11711
	DefaultKeepLoadedMinutes = 5
	KeepForever              = -1
)

// Defaults returns the settings a new install starts with.
func Defaults() Settings {
	return Settings{
		Speculation: Speculation{Enabled: true, AutoDepth: true, MaxDraftTokens: 8, MinDraftProb: 0.1, PromptLookup: true, MTP: true},
		// Cache-aware routing stays off (exact routing by default): no
		// window kept the next token at full depth. BenchmarkCacheRoutingTable
		// on the 48-layer 30B-A3B-shaped Q4_K_M synthetic (router skew 0.5,
		// peaked: exact routing's median top-1 probability 1.000) under a
		// 4 GB cgroup limit, 3 GB cache, 64 greedy tokens: every window
		// raised the hit rate from 96.5 % to 99.0–99.2 % and decoded
		// 1.4–2.3× faster, but teacher-forced top-1 agreement with exact
		// routing was 42–63 % (the bar for a default is 99 %): ~10 % of
		// the slots swapped in each of 48 layers moves this random-weight
		// model's output. At 4 layers (1 GB limit) every window kept 100 %.
		// The window offered when the user turns it on is the one that did
		// least harm at full depth: J=2, M=12 (median next-token KL 0.0087,
		// route agreement 89.8 %, 1.55×; J=1 M=12: KL 0.41, 86.5 %).
		Routing:  Routing{Enabled: false, Strength: 2, ProtectedTop: 2, MaxRankWindow: 12, AlwaysKept: 2},
		Memory:   Memory{ExpertCacheGB: 0, KeepLoadedMinutes: DefaultKeepLoadedMinutes, LearnUsage: true},
		API:      API{Port: DefaultPort, AllowNetwork: false},
		Advanced: Advanced{Threads: 0, ContextLength: 0, Backend: BackendAuto},
	}
}

// Kind is the type of a field's value.
type Kind int

// Field kinds.
const (
	Bool Kind = iota
	Int
	Float
	Choice // one of Choices (a string value)
)

// Option is one value of a Choice field and the word shown for it.
type Option struct {
	Value string // as stored in the JSON
	Label string // as shown in the settings window
}

// Field describes one knob: where it lives in the JSON, how to present it,
// its bounds and whether the engine applies it yet.
type Field struct {
	Key   string // JSON path, e.g. "speculation.max_draft_tokens"
	Group string // the settings window's group
	Label string // short name shown next to the control
	Help  string // one plain-language sentence
	Kind  Kind
	Min   float64 // inclusive bounds for Int and Float (special values aside)
	Max   float64
	// Special maps values outside [Min, Max] that mean something (0 =
	// "Auto") to the word shown and accepted for them.
	Special map[float64]string
	// Options are a Choice field's values, in display order.
	Options []Option
	// Live is true when a change takes effect in this version; false fields
	// are shown but disabled, "coming in a later version".
	Live bool

	ptr func(*Settings) any // *bool, *int, *float64 or, for Choice, a *string kind
}

// Group names, in window order.
const (
	GroupSpeculation = "Speculative decoding"
	GroupRouting     = "Cache-aware routing (MoCE)"
	GroupMemory      = "Memory"
	GroupAPI         = "API"
	GroupAdvanced    = "Advanced"
)

// LaterText is what the UI shows beside knobs the engine cannot apply yet.
const LaterText = "coming in a later version"

// Fields lists every knob in display order. The slice is shared: do not
// modify it.
var fields = []Field{
	{Key: "speculation.enabled", Group: GroupSpeculation, Label: "Speculative decoding", Kind: Bool, Live: true,
		Help: "Guesses several words ahead and checks them at once, which can make answers appear faster without changing them.",
		ptr:  func(s *Settings) any { return &s.Speculation.Enabled }},
	{Key: "speculation.auto_depth", Group: GroupSpeculation, Label: "Automatic depth (SpecGate)", Kind: Bool, Live: true,
		Help: "Measures how often guesses are right and only guesses as far ahead as pays off; off always guesses the maximum.",
		ptr:  func(s *Settings) any { return &s.Speculation.AutoDepth }},
	{Key: "speculation.max_draft_tokens", Group: GroupSpeculation, Label: "Max draft tokens", Kind: Int, Min: 1, Max: 32, Live: true,
		Help: "The most words guessed ahead in one step (at most 15 are used).",
		ptr:  func(s *Settings) any { return &s.Speculation.MaxDraftTokens }},
	{Key: "speculation.min_draft_probability", Group: GroupSpeculation, Label: "Minimum draft probability", Kind: Float, Min: 0, Max: 1, Live: true,
		Help: "Stops guessing further once a guess is less likely than this (0 to 1).",
		ptr:  func(s *Settings) any { return &s.Speculation.MinDraftProb }},
	{Key: "speculation.prompt_lookup", Group: GroupSpeculation, Label: "Prompt-lookup drafts", Kind: Bool, Live: true,
		Help: "Takes guesses from text already in the conversation, which helps when answers repeat or quote it.",
		ptr:  func(s *Settings) any { return &s.Speculation.PromptLookup }},
	{Key: "speculation.mtp", Group: GroupSpeculation, Label: "Model's own drafts (MTP)", Kind: Bool, Live: true,
		Help: "Lets a model that has a built-in look-ahead head guess the next words with it (models without one are not affected).",
		ptr:  func(s *Settings) any { return &s.Speculation.MTP }},

	{Key: "routing.enabled", Group: GroupRouting, Label: "Cache-aware routing", Kind: Bool, Live: true,
		Help: "Prefers parts of the model already in memory, trading a little exactness for speed when the model streams from disk.",
		ptr:  func(s *Settings) any { return &s.Routing.Enabled }},
	{Key: "routing.strength", Group: GroupRouting, Label: "Strength (λ)", Kind: Float, Live: true, Min: 1, Max: 10,
		Help: "How strongly parts already in memory are preferred; 1 means not at all.",
		ptr:  func(s *Settings) any { return &s.Routing.Strength }},
	{Key: "routing.protected_ranks", Group: GroupRouting, Label: "Protected top ranks", Kind: Int, Live: true, Min: 0, Max: 64,
		Help: "This many of the model's first choices are always kept, whatever is in memory.",
		ptr:  func(s *Settings) any { return &s.Routing.ProtectedTop }},
	{Key: "routing.max_rank_window", Group: GroupRouting, Label: "Max-rank window (M)", Kind: Int, Live: true, Min: 1, Max: 512,
		Help: "A part in memory may stand in only if the model ranked it among its top M choices.",
		ptr:  func(s *Settings) any { return &s.Routing.MaxRankWindow }},
	{Key: "routing.always_kept", Group: GroupRouting, Label: "Always kept (J)", Kind: Int, Live: true, Min: 0, Max: 64,
		Help: "The model's top J choices are always used, never swapped for a part in memory.",
		ptr:  func(s *Settings) any { return &s.Routing.AlwaysKept }},

	{Key: "memory.expert_cache_gb", Group: GroupMemory, Label: "Expert cache budget (GB)", Kind: Float, Min: 0.5, Max: 4096,
		Special: map[float64]string{0: "Auto"}, Live: true,
		Help: "Memory set aside for model parts streamed from disk (Auto: what this computer can spare now), from the next time the model loads.",
		ptr:  func(s *Settings) any { return &s.Memory.ExpertCacheGB }},
	{Key: "memory.learn_usage", Group: GroupMemory, Label: "Learn which parts I use", Kind: Bool, Live: true,
		Help: "Remembers which model parts your conversations use, so a streamed model starts faster after a restart.",
		ptr:  func(s *Settings) any { return &s.Memory.LearnUsage }},
	{Key: "memory.keep_loaded_minutes", Group: GroupMemory, Label: "Keep model loaded (minutes)", Kind: Int, Min: 0, Max: 10080,
		Special: map[float64]string{KeepForever: "forever"}, Live: true,
		Help: "How long the model stays in memory after its last use; 0 frees memory at once, forever never does.",
		ptr:  func(s *Settings) any { return &s.Memory.KeepLoadedMinutes }},

	{Key: "api.port", Group: GroupAPI, Label: "Port", Kind: Int, Min: 1024, Max: 65535, Live: true,
		Help: "The network port local apps connect to; a change applies when Strata next starts.",
		ptr:  func(s *Settings) any { return &s.API.Port }},
	{Key: "api.allow_network", Group: GroupAPI, Label: "Allow other devices on the network", Kind: Bool, Live: true,
		Help: "Lets other computers on your network use Strata with the token (from the next start); leave off unless you need it.",
		ptr:  func(s *Settings) any { return &s.API.AllowNetwork }},

	{Key: "advanced.threads", Group: GroupAdvanced, Label: "Threads", Kind: Int, Min: 1, Max: 256, Live: true,
		Special: map[float64]string{0: "Auto"},
		Help:    "How many processor cores work on each answer (Auto: one per physical core), from the next time the model loads.",
		ptr:     func(s *Settings) any { return &s.Advanced.Threads }},
	{Key: "advanced.context_length", Group: GroupAdvanced, Label: "Context length (tokens)", Kind: Int, Min: 256, Max: 1 << 20, Live: true,
		Special: map[float64]string{0: "Auto"},
		Help:    "How much text the model keeps in view at once (longer uses more memory; Auto: the model's own, up to 4096), from the next time the model loads.",
		ptr:     func(s *Settings) any { return &s.Advanced.ContextLength }},
	{Key: "advanced.backend", Group: GroupAdvanced, Label: "Run the model on", Kind: Choice, Live: true,
		Options: []Option{{string(BackendAuto), "Auto"}, {string(BackendCPU), "CPU"}, {string(BackendMetal), "Metal (GPU)"}},
		Help:    "Auto uses the Mac's graphics chip once a self-check of it passed, and the processor otherwise (the model reloads when this changes).",
		ptr:     func(s *Settings) any { return &s.Advanced.Backend }},
}

// Fields returns every knob in display order.
func Fields() []Field { return append([]Field(nil), fields...) }

// Lookup returns the field with the given JSON key.
func Lookup(key string) (Field, bool) {
	for _, f := range fields {
		if f.Key == key {
			return f, true
		}
	}
	return Field{}, false
}

// Bool returns a Bool field's value in s.
func (f Field) Bool(s Settings) bool {
	if p, ok := f.ptr(&s).(*bool); ok {
		return *p
	}
	return false
}

// SetBool sets a Bool field in s.
func (f Field) SetBool(s *Settings, v bool) {
	if p, ok := f.ptr(s).(*bool); ok {
		*p = v
	}
}

// Number returns an Int or Float field's value in s.
func (f Field) Number(s Settings) float64 {
	switch p := f.ptr(&s).(type) {
	case *int:
		return float64(*p)
	case *float64:
		return *p
	}
	return 0
}

// Value returns a Choice field's stored value in s.
func (f Field) Value(s Settings) string {
	if p, ok := f.ptr(&s).(*Backend); ok {
		return string(*p)
	}
	return ""
}

// SetValue sets a Choice field in s to one of its options' values.
func (f Field) SetValue(s *Settings, v string) error {
	for _, o := range f.Options {
		if o.Value == v {
			if p, ok := f.ptr(s).(*Backend); ok {
				*p = Backend(v)
			}
			return nil
		}
	}
	return f.errorf("must be %s, got %q", f.expect(), v)
}

// Format returns the field's value in s as the settings window shows it.
func (f Field) Format(s Settings) string {
	if f.Kind == Bool {
		return strconv.FormatBool(f.Bool(s))
	}
	if f.Kind == Choice {
		v := f.Value(s)
		for _, o := range f.Options {
			if o.Value == v {
				return o.Label
			}
		}
		return v
	}
	v := f.Number(s)
	if w, ok := f.Special[v]; ok {
		return w
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Parse sets the field in s from text as typed by a user: a number, a
// special word ("Auto", "forever", case-insensitive) or true/false. It
// checks the syntax and the bounds and names the field in its error.
func (f Field) Parse(s *Settings, text string) error {
	text = strings.TrimSpace(text)
	if f.Kind == Bool {
		b, err := strconv.ParseBool(text)
		if err != nil {
			return f.errorf("must be on or off, got %q", text)
		}
		f.SetBool(s, b)
		return nil
	}
	if f.Kind == Choice {
		for _, o := range f.Options {
			if strings.EqualFold(text, o.Value) || strings.EqualFold(text, o.Label) {
				return f.SetValue(s, o.Value)
			}
		}
		return f.errorf("must be %s, got %q", f.expect(), text)
	}
	v, ok := f.special(text)
	if !ok {
		var err error
		switch f.Kind {
		case Int:
			var n int64
			n, err = strconv.ParseInt(text, 10, 64)
			v = float64(n)
		default:
			v, err = strconv.ParseFloat(text, 64)
		}
		if err != nil || text == "" {
			return f.errorf("must be %s, got %q", f.expect(), text)
		}
	}
	if err := f.check(v); err != nil {
		return err
	}
	switch p := f.ptr(s).(type) {
	case *int:
		*p = int(v)
	case *float64:
		*p = v
	}
	return nil
}

func (f Field) special(text string) (float64, bool) {
	for v, w := range f.Special {
		if strings.EqualFold(text, w) {
			return v, true
		}
	}
	return 0, false
}

// expect describes the accepted values, e.g. "a whole number from 1 to 32 or Auto".
func (f Field) expect() string {
	if f.Kind == Choice {
		var vs []string
		for _, o := range f.Options {
			vs = append(vs, strconv.Quote(o.Value))
		}
		return "one of " + strings.Join(vs, ", ")
	}
	what := "a number"
	if f.Kind == Int {
		what = "a whole number"
	}
	s := fmt.Sprintf("%s from %s to %s", what, fmtNum(f.Min), fmtNum(f.Max))
	for _, w := range f.specialWords() {
		s += " or " + w
	}
	return s
}

func (f Field) specialWords() []string {
	var ws []string
	for _, w := range f.Special {
		ws = append(ws, w)
	}
	return ws // at most one per field today
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func (f Field) check(v float64) error {
	if _, ok := f.Special[v]; ok {
		return nil
	}
	if math.IsNaN(v) || v < f.Min || v > f.Max || (f.Kind == Int && v != math.Trunc(v)) {
		return f.errorf("must be %s, got %s", f.expect(), fmtNum(v))
	}
	return nil
}

// FieldError is a validation failure of one field.
type FieldError struct {
	Key   string // the field's JSON key
	Label string // the field's label
	Msg   string // what is wrong, e.g. "must be a whole number from 1 to 32, got 40"
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("setting %s (%s): %s", e.Key, e.Label, e.Msg)
}

func (f Field) errorf(format string, args ...any) *FieldError {
	return &FieldError{Key: f.Key, Label: f.Label, Msg: fmt.Sprintf(format, args...)}
}

// Check returns every field error of s, in display order (nil if s is
// valid): bounds per field, then rules between fields.
func (s Settings) Check() []*FieldError {
	var errs []*FieldError
	bad := map[string]bool{}
	for _, f := range fields {
		if f.Kind == Bool {
			continue
		}
		if f.Kind == Choice {
			if err := f.SetValue(&s, f.Value(s)); err != nil {
				var fe *FieldError
				errors.As(err, &fe)
				errs = append(errs, fe)
				bad[f.Key] = true
			}
			continue
		}
		if err := f.check(f.Number(s)); err != nil {
			var fe *FieldError
			errors.As(err, &fe)
			errs = append(errs, fe)
			bad[f.Key] = true
		}
	}
	if err := checkModelName(s.Model); err != nil {
		errs = append(errs, err)
	}
	if n := len(s.Browser.AllowedOrigins.List()); n > MaxOrigins {
		errs = append(errs, &FieldError{Key: "browser.allowed_origins", Label: "Allowed web pages", Msg: fmt.Sprintf("at most %d origins, got %d", MaxOrigins, n)})
	}
	for _, o := range s.Browser.AllowedOrigins.List() {
		if _, err := CheckOrigin(o); err != nil {
			errs = append(errs, &FieldError{Key: "browser.allowed_origins", Label: "Allowed web pages", Msg: err.Error()})
		}
	}
	r := s.Routing
	if !bad["routing.always_kept"] && !bad["routing.max_rank_window"] && r.AlwaysKept > r.MaxRankWindow {
		f, _ := Lookup("routing.always_kept")
		errs = append(errs, f.errorf("must not exceed the max-rank window M (%d), got %d", r.MaxRankWindow, r.AlwaysKept))
	}
	if !bad["routing.protected_ranks"] && !bad["routing.max_rank_window"] && r.ProtectedTop > r.MaxRankWindow {
		f, _ := Lookup("routing.protected_ranks")
		errs = append(errs, f.errorf("must not exceed the max-rank window M (%d), got %d", r.MaxRankWindow, r.ProtectedTop))
	}
	return errs
}

// checkModelName refuses names that could reach outside the model store
// (the model manager checks them again before use).
func checkModelName(name string) *FieldError {
	bad := len(name) > 200 || name == "." || name == ".." || strings.ContainsAny(name, "/\\")
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			bad = true
		}
	}
	if !bad {
		return nil
	}
	return &FieldError{Key: "model", Label: "Active model", Msg: fmt.Sprintf("%q is not a model name", name)}
}

// Validate returns nil if s is valid, else an error listing every field
// error (each a *FieldError, reachable with errors.As).
func (s Settings) Validate() error {
	errs := s.Check()
	if len(errs) == 0 {
		return nil
	}
	list := make([]error, len(errs))
	for i, e := range errs {
		list[i] = e
	}
	return errors.Join(list...)
}

// maxFileSize bounds a settings file or patch; real ones are under 1 KB.
const maxFileSize = 64 << 10

// Decode parses a settings document onto base: fields it does not mention
// keep base's values, unknown fields are ignored (a newer version may have
// written them), and the result must be valid.
func Decode(base Settings, data []byte) (Settings, error) {
	if len(data) > maxFileSize {
		return Settings{}, fmt.Errorf("settings: %d bytes is more than the %d allowed", len(data), maxFileSize)
	}
	s := base
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&s); err != nil {
		return Settings{}, fmt.Errorf("settings: %w", err)
	}
	if dec.More() {
		return Settings{}, errors.New("settings: unexpected data after the JSON object")
	}
	if err := s.Validate(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// Patch applies a partial JSON document (as sent with settings.set) to s.
// Unlike Decode, unknown fields are refused, naming the field.
func (s Settings) Patch(data []byte) (Settings, error) {
	if len(data) > maxFileSize {
		return Settings{}, fmt.Errorf("settings: %d bytes is more than the %d allowed", len(data), maxFileSize)
	}
	out := s
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return Settings{}, fmt.Errorf("settings: %w", err)
	}
	if dec.More() {
		return Settings{}, errors.New("settings: unexpected data after the JSON object")
	}
	if err := out.Validate(); err != nil {
		return Settings{}, err
	}
	return out, nil
}

func jsonIndent(s Settings) ([]byte, error) {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode settings: %w", err)
	}
	return append(data, '\n'), nil
}
