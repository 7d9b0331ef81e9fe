package download

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Info is what a server says about a file before it is downloaded.
type Info struct {
	URL          string // after redirects
	Size         int64  // -1 when unknown
	AcceptRanges bool
	ETag         string
	// LinkedETag and LinkedSize are Hugging Face's X-Linked-Etag (the LFS
	// sha256 of the file) and X-Linked-Size, seen on any hop of the
	// redirect chain; "" and -1 when absent.
	LinkedETag string
	LinkedSize int64
}

// Probe asks the server about rawURL with HEAD, following up to 10
// redirects, each only to https. When HEAD is refused it tries a one-byte
// ranged GET.
func Probe(ctx context.Context, client *http.Client, rawURL string) (Info, error) {
	info := Info{Size: -1, LinkedSize: -1}
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	cur := rawURL
	for hop := 0; ; hop++ {
		if hop > 10 {
			return info, errors.New("stopped after 10 redirects")
		}
		u, err := url.Parse(cur)
		if err != nil {
			return info, fmt.Errorf("probe: %w", err)
		}
		if u.Scheme != "https" {
			if hop == 0 {
				return info, ErrInsecureURL
			}
			return info, fmt.Errorf("%w: %s", ErrInsecureRedirect, redact(cur))
		}
		resp, err := probeOnce(ctx, &c, http.MethodHead, cur)
		if err != nil {
			return info, err
		}
		if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented {
			resp, err = probeOnce(ctx, &c, http.MethodGet, cur)
			if err != nil {
				return info, err
			}
		}
		h := resp.Header
		if v := strings.Trim(h.Get("X-Linked-Etag"), `"`); v != "" && info.LinkedETag == "" {
			info.LinkedETag = strings.TrimPrefix(v, "W/")
			info.LinkedETag = strings.Trim(info.LinkedETag, `"`)
		}
		if v, err := strconv.ParseInt(h.Get("X-Linked-Size"), 10, 64); err == nil && v >= 0 && info.LinkedSize < 0 {
			info.LinkedSize = v
		}
		switch {
		case resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.StatusCode != http.StatusNotModified:
			loc, err := resp.Location()
			if err != nil {
				return info, fmt.Errorf("probe %s: redirect without Location", redact(cur))
			}
			cur = loc.String()
			continue
		case resp.StatusCode == http.StatusPartialContent:
			_, total, err := parseContentRange(h.Get("Content-Range"))
			if err != nil {
				return info, fmt.Errorf("probe %s: %w", redact(cur), err)
			}
			info.Size = total
			info.AcceptRanges = true
		case resp.StatusCode == http.StatusOK:
			info.Size = resp.ContentLength
			info.AcceptRanges = strings.EqualFold(h.Get("Accept-Ranges"), "bytes")
		default:
			return info, &StatusError{URL: cur, Code: resp.StatusCode}
		}
		info.URL = cur
		info.ETag = h.Get("ETag")
		return info, nil
	}
}

func probeOnce(ctx context.Context, c *http.Client, method, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	if method == http.MethodGet {
		req.Header.Set("Range", "bytes=0-0")
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", redact(u), err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp, nil
}
