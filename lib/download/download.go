// Package download fetches a checkpoint archive from its signed URL and
// installs it as a directory, safely:
//
//   - the HTTP body streams straight into lib/archive (no archive on disk);
//   - extraction goes into a hidden sibling ".<name>.partial-XXXX" in the
//     same parent, which is renamed into place only after the whole archive
//     arrived (tar's end-of-archive marker, a clean end of the compressed
//     stream, every byte of an announced Content-Length) and holds the
//     checkpoint_complete marker and, for an adapter, its files;
//   - with Force an existing copy is replaced atomically (renameat2
//     RENAME_EXCHANGE where available), so it is never destroyed before the
//     new copy is complete;
//   - any failure, including context cancellation, removes the partial
//     directory; only a process kill can leave one behind, and the next
//     download of the same name removes it (atomicfile.SweepStale);
//   - 408, 429 and 5xx answers (the 503 "archive is being generated") and
//     network errors are retried with backoff; a connection lost mid-body
//     resumes with a Range request when the server supports it, and
//     restarts from scratch otherwise; a body that stalls for IdleTimeout
//     counts as a network error, and so does one slower than MinRate on
//     average over RateWindow (a trickle never goes quiet for long);
//   - a compressed archive may expand only so far (archive.Options), and
//     the total is capped at MaxBytes, TINKER_DOWNLOAD_MAX_BYTES or 256 GiB.
//
// The storage host gets a plain GET with no Tinker headers: pass an
// http.Client that adds no credentials.
package download

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tinkershell/tinker/lib/archive"
	"github.com/tinkershell/tinker/lib/atomicfile"
	"github.com/tinkershell/tinker/lib/peft"
)

// Marker is the file whose presence marks a complete checkpoint.
const Marker = peft.CompleteFile

// Errors to test with errors.Is.
var (
	// ErrTargetExists: the target exists and Force was not set. Returned
	// before any network traffic.
	ErrTargetExists = errors.New("target directory already exists")
	// ErrIncomplete: the archive lacks the checkpoint_complete marker or,
	// for an adapter, one of its files, or a weights file is cut short.
	ErrIncomplete = errors.New("checkpoint is incomplete")
	// ErrDownload: the archive could not be fetched (HTTP error status or
	// network failure, after retries). Wraps a *StatusError or the cause.
	ErrDownload = errors.New("download failed")
	// ErrExtract: the archive was fetched but is unsafe or corrupt. Wraps
	// the lib/archive error (archive.ErrUnsafePath, archive.ErrLink, ...).
	ErrExtract = errors.New("extract failed")
)

// StatusError is a non-2xx answer from the storage host. Its text follows
// Python's urllib ("HTTP Error 404: Not Found"), as the official CLI shows it.
type StatusError struct {
	Code       int
	Status     string        // reason phrase, e.g. "Not Found"
	RetryAfter time.Duration // from Retry-After, 0 if absent
}

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP Error %d: %s", e.Code, e.Status) }

// Progress receives byte progress of the archive download (compressed
// bytes off the wire). *progress.Bar and *progress.ClickBar satisfy it.
type Progress interface {
	SetTotal(n int64) // Content-Length, 0 if unknown; called per attempt
	Set(n int64)      // absolute position; 0 when a download restarts
	Add(n int64)
}

// Options describe one download. URL and Name are required.
type Options struct {
	// URL returns a signed archive URL. It is called once per attempt that
	// starts from scratch, so an expired URL is replaced.
	URL func(ctx context.Context) (string, error)
	// Client fetches the signed URL; nil means a default client. It must
	// not add credentials: the URL points at a storage host, not the API.
	Client *http.Client
	// Parent is the directory the checkpoint directory goes in; it is
	// created if missing. Empty means the current directory (absolute).
	Parent string
	// Name is the checkpoint directory's name; see TargetName.
	Name string
	// Force replaces an existing target once the new copy is complete.
	Force bool
	// Adapter requires the files of a PEFT adapter (sampler weights):
	// adapter_config.json and adapter_model.safetensors (or .bin).
	Adapter bool
	// Progress, if set, follows the bytes received.
	Progress Progress
	// Archive holds the extraction limits and an optional per-member hook.
	// A zero MaxBytes means TINKER_DOWNLOAD_MAX_BYTES when set, else
	// archive.DefaultMaxBytes; Announced is set from Content-Length.
	Archive archive.Options
	// Attempts is the total number of tries for retryable failures
	// (default 5); each Range resume also uses one.
	Attempts int
	// Backoff is the wait before the first retry, doubling each time up to
	// MaxBackoff (defaults 1 s and 30 s). A Retry-After header wins, capped
	// at MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// IdleTimeout aborts an attempt that receives nothing for this long
	// (default 60 s, the official CLI's socket timeout).
	IdleTimeout time.Duration
	// MinRate (bytes per second, default 1 KiB/s) is the least average
	// rate over each RateWindow (default 2 min) an attempt may run at.
	MinRate    int64
	RateWindow time.Duration
	// OnRetry, if set, is told about each retry before its wait.
	OnRetry func(attempt int, wait time.Duration, err error)
}

// Result describes a finished download.
type Result struct {
	Path          string // the installed directory: Parent joined with Name
	ContentLength int64  // Content-Length of the successful response, 0 if absent
	ArchiveBytes  int64  // archive bytes received in the successful attempt
	Files         int    // regular files extracted
	Bytes         int64  // bytes extracted
}

// TargetName is the directory name the official CLI gives a checkpoint:
// the path without "tinker://", every "/" replaced by "_".
func TargetName(checkpointPath string) string {
	return strings.ReplaceAll(strings.TrimPrefix(checkpointPath, "tinker://"), "/", "_")
}

// TargetPath is where Download with this parent and name installs the
// checkpoint: filepath.Join(parent, name), or <absolute cwd>/<name> when
// parent is empty.
func TargetPath(parent, name string) (string, error) {
	if parent == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("current directory: %w", err)
		}
		parent = wd
	}
	return filepath.Join(parent, name), nil
}

// Prepare is the local check every download makes before asking for the
// archive: it creates parent, finds the target (TargetPath) and refuses an
// existing one unless force (ErrTargetExists, with the target still
// returned for the message). Download makes it again, so
// callers run it early only to fail before other work, as the official
// CLI does before it contacts the service.
func Prepare(parent, name string, force bool) (target string, err error) {
	if parent != "" {
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return "", fmt.Errorf("create output directory: %w", err)
		}
	}
	if target, err = TargetPath(parent, name); err != nil {
		return "", err
	}
	if _, err := os.Lstat(target); err == nil && !force {
		return target, fmt.Errorf("%w: %s", ErrTargetExists, target)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("check target: %w", err)
	}
	return target, nil
}

// Download fetches the archive and installs it at TargetPath(opts.Parent,
// opts.Name). See the package comment for the guarantees.
func Download(ctx context.Context, opts Options) (*Result, error) {
	if opts.URL == nil {
		return nil, errors.New("download: no archive URL source")
	}
	if opts.Name == "" || opts.Name == "." || opts.Name == ".." || strings.ContainsAny(opts.Name, `/\`) || strings.ContainsRune(opts.Name, 0) {
		return nil, fmt.Errorf("download: invalid target name %q", opts.Name)
	}
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}

	target, err := Prepare(opts.Parent, opts.Name, opts.Force)
	if err != nil {
		return nil, err
	}

	d := &downloader{opts: opts, parent: filepath.Dir(target)}
	// A killed download of the same name left its partial directory behind.
	atomicfile.SweepStale(d.parent, d.tempPrefix())
	res, tmp, err := d.run(ctx)
	if err != nil {
		return nil, err
	}
	defer tmp.Release()
	atomicfile.FinishSwaps(target) // a forced download killed while replacing it
	if err := install(tmp, target, opts.Force); err != nil {
		os.RemoveAll(tmp.Path)
		return nil, err
	}
	res.Path = target
	return res, nil
}

func (o *Options) setDefaults() error {
	if o.Client == nil {
		o.Client = defaultClient
	}
	if o.Attempts <= 0 {
		o.Attempts = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 60 * time.Second
	}
	if o.MinRate <= 0 {
		o.MinRate = 1 << 10
	}
	if o.RateWindow <= 0 {
		o.RateWindow = 2 * time.Minute
	}
	if o.Progress == nil {
		o.Progress = nopProgress{}
	}
	if o.Archive.MaxBytes <= 0 {
		if v := os.Getenv(MaxBytesEnv); v != "" {
			n, err := parseBytes(v)
			if err != nil {
				return fmt.Errorf("%s: %w", MaxBytesEnv, err)
			}
			o.Archive.MaxBytes = n
		}
	}
	return nil
}

// MaxBytesEnv names the environment variable that raises or lowers the
// cap on a checkpoint's extracted size.
const MaxBytesEnv = "TINKER_DOWNLOAD_MAX_BYTES"

// parseBytes reads a byte count: digits with an optional binary suffix
// K, M, G or T ("512G").
func parseBytes(s string) (int64, error) {
	shift := 0
	if i := strings.IndexAny(s, "KMGTkmgt"); i >= 0 && i == len(s)-1 {
		shift = 10 * (1 + strings.IndexByte("KMGT", strings.ToUpper(s[i:])[0]))
		s = s[:i]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("want a positive byte count such as 512G, got %q", s)
	}
	return n << shift, nil
}

// defaultClient: no overall timeout (archives are large; IdleTimeout guards
// stalls), no transparent decompression (Extract sniffs gzip itself).
var defaultClient = &http.Client{Transport: &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DisableCompression:    true,
	TLSHandshakeTimeout:   30 * time.Second,
	ResponseHeaderTimeout: 60 * time.Second,
	MaxIdleConnsPerHost:   4,
}}

type nopProgress struct{}

func (nopProgress) SetTotal(int64) {}
func (nopProgress) Set(int64)      {}
func (nopProgress) Add(int64)      {}

type downloader struct {
	opts   Options
	parent string
	tries  int // attempts used, including resumes
}

// run retries whole attempts until one extracts a complete archive into a
// fresh partial directory, which it returns still locked.
func (d *downloader) run(ctx context.Context) (res *Result, tmp *atomicfile.TempDir, err error) {
	err = d.retry(ctx, func(ctx context.Context) error {
		res, tmp, err = d.attempt(ctx)
		return err
	})
	return res, tmp, err
}

// retry runs attempt until it succeeds, fails for good (an error not marked
// retryable, or the context's), or has used up Attempts.
func (d *downloader) retry(ctx context.Context, attempt func(context.Context) error) error {
	for {
		d.tries++
		err := attempt(ctx)
		if err == nil {
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		var retry *retryable
		if !errors.As(err, &retry) {
			return err
		}
		if d.tries >= d.opts.Attempts {
			return fmt.Errorf("%w after %d attempts: %w", ErrDownload, d.tries, retry.err)
		}
		if err := d.wait(ctx, retry.err); err != nil {
			return err
		}
	}
}

// wait sleeps before the next try: exponential backoff with jitter, or the
// server's Retry-After, capped at MaxBackoff.
func (d *downloader) wait(ctx context.Context, cause error) error {
	delay := d.opts.Backoff << min(d.tries-1, 20)
	delay = time.Duration(float64(delay) * (0.8 + 0.4*rand.Float64()))
	var se *StatusError
	if errors.As(cause, &se) && se.RetryAfter > 0 {
		delay = se.RetryAfter
	}
	delay = min(delay, d.opts.MaxBackoff)
	if d.opts.OnRetry != nil {
		d.opts.OnRetry(d.tries+1, delay, cause)
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryable marks an attempt failure worth another try.
type retryable struct{ err error }

func (r *retryable) Error() string { return r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

// attempt downloads and extracts once into a new partial directory, which
// it removes again on failure.
func (d *downloader) attempt(ctx context.Context) (_ *Result, _ *atomicfile.TempDir, err error) {
	signed, err := d.opts.URL(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("get archive URL: %w", err)
	}
	td, err := atomicfile.MkdirTemp(d.parent, d.tempPrefix())
	if err != nil {
		return nil, nil, fmt.Errorf("create temporary directory: %w", err)
	}
	tmp := td.Path
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
			td.Release()
		}
	}()

	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	body, err := d.open(actx, cancel, signed)
	if err != nil {
		return nil, nil, err
	}
	defer body.close()
	d.opts.Progress.SetTotal(max(body.total, 0))
	d.opts.Progress.Set(0)

	aopts := d.opts.Archive
	aopts.Announced = max(body.total, 0)
	st, err := archive.Extract(actx, body, tmp, aopts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if body.netErr != nil {
			return nil, nil, &retryable{body.netErr}
		}
		// The extractor may notice the cancelled attempt before the next
		// Read does; the cause says why it was cancelled.
		if cause := context.Cause(actx); stalled(cause) {
			return nil, nil, &retryable{cause}
		}
		if errors.Is(err, archive.ErrTooBig) {
			return nil, nil, fmt.Errorf("%w: %w; set %s (e.g. 512G) to allow larger checkpoints", ErrExtract, err, MaxBytesEnv)
		}
		return nil, nil, fmt.Errorf("%w: %w", ErrExtract, err)
	}
	// Extract read the stream to its end; with Content-Length known, that
	// end must be where the server said.
	if body.total >= 0 && body.off != body.total {
		return nil, nil, fmt.Errorf("%w: %w: got %d of the %d bytes announced", ErrExtract, archive.ErrTruncated, body.off, body.total)
	}
	if err := verify(tmp, d.opts.Adapter); err != nil {
		return nil, nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp made it 0700
		return nil, nil, fmt.Errorf("set permissions: %w", err)
	}
	return &Result{
		ContentLength: max(body.total, 0),
		ArchiveBytes:  body.off,
		Files:         st.Files,
		Bytes:         st.Bytes,
	}, td, nil
}

// tempPrefix names the partial directories of this download.
func (d *downloader) tempPrefix() string {
	return "." + tempStem(d.opts.Name) + ".partial-"
}

// tempStem shortens very long names so the partial directory's name stays
// within the usual 255-byte limit when the target's own name fits.
func tempStem(name string) string {
	const max = 200
	if len(name) <= max {
		return name
	}
	return strings.ToValidUTF8(name[:max], "")
}

// The cancellation causes of an attempt that is not getting anywhere; both
// are network failures, retried like a dropped connection.
var (
	errStalled = errors.New("no data received")
	errTooSlow = errors.New("download too slow")
)

func stalled(cause error) bool { return errors.Is(cause, errStalled) || errors.Is(cause, errTooSlow) }

// open sends the GET and returns the body as a resumable stream.
func (d *downloader) open(ctx context.Context, cancel context.CancelCauseFunc, signed string) (*body, error) {
	b := &body{d: d, ctx: ctx, url: signed, total: -1}
	b.watchdog = time.AfterFunc(d.opts.IdleTimeout, func() {
		cancel(fmt.Errorf("%w for %v", errStalled, d.opts.IdleTimeout))
	})
	b.rate = newRateGuard(d.opts.MinRate, d.opts.RateWindow, cancel)
	resp, err := b.get("")
	if err != nil {
		b.stopTimers()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b.stopTimers()
		resp.Body.Close()
		return nil, statusErr(resp)
	}
	b.resp = resp
	b.total = resp.ContentLength
	b.validator = resp.Header.Get("ETag")
	if b.validator == "" {
		b.validator = resp.Header.Get("Last-Modified")
	}
	b.ranges = resp.Header.Get("Accept-Ranges") == "bytes" && b.total > 0 && b.validator != ""
	return b, nil
}

// get issues one GET, with a Range header when rng is set. Failures come back
// as retryable (network, 408, 429, 5xx) or final errors, never naming the
// signed URL's query (it carries the signature).
func (b *body) get(rng string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(b.ctx, http.MethodGet, b.url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDownload, redact(err))
	}
	if rng != "" {
		req.Header.Set("Range", rng)
		req.Header.Set("If-Range", b.validator)
	}
	resp, err := b.d.opts.Client.Do(req)
	if err != nil {
		if cause := context.Cause(b.ctx); stalled(cause) {
			return nil, &retryable{cause}
		}
		return nil, &retryable{redact(err)}
	}
	return resp, nil
}

func statusErr(resp *http.Response) error {
	se := &StatusError{Code: resp.StatusCode, Status: http.StatusText(resp.StatusCode)}
	if se.Status == "" {
		se.Status = strings.TrimSpace(strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode)))
	}
	if s := resp.Header.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			se.RetryAfter = time.Duration(n) * time.Second
		} else if t, err := http.ParseTime(s); err == nil {
			se.RetryAfter = max(time.Until(t), 0)
		}
	}
	switch c := resp.StatusCode; {
	case c == http.StatusRequestTimeout, c == http.StatusTooManyRequests, c >= 500:
		return &retryable{se}
	}
	return fmt.Errorf("%w: %w", ErrDownload, se)
}

// body is the archive stream handed to the extractor. It counts bytes,
// feeds the progress sink and the stall watchdog, and when the connection
// breaks it tries to continue from the current offset with a Range request
// so the extractor never notices.
type body struct {
	d         *downloader
	ctx       context.Context
	url       string
	resp      *http.Response
	total     int64 // Content-Length, -1 if unknown
	off       int64
	validator string // ETag or Last-Modified, for If-Range
	ranges    bool   // the server advertised byte ranges
	watchdog  *time.Timer
	rate      *rateGuard
	netErr    error // the network failure that ended the stream, if any
}

func (b *body) Read(p []byte) (int, error) {
	for {
		n, err := b.resp.Body.Read(p)
		if n > 0 {
			b.off += int64(n)
			b.d.opts.Progress.Add(int64(n))
			b.watchdog.Reset(b.d.opts.IdleTimeout)
			b.rate.add(int64(n))
		}
		if err == nil || err == io.EOF {
			return n, err
		}
		if cause := context.Cause(b.ctx); cause != nil {
			if stalled(cause) {
				b.netErr = cause
			}
			return n, cause
		}
		if n > 0 {
			// Deliver what arrived; the error will repeat on the next Read.
			return n, nil
		}
		if rerr := b.resume(err); rerr != nil {
			b.netErr = rerr
			return 0, rerr
		}
	}
}

// resume replaces the broken response with one starting at the current
// offset, or returns the error to give up on this attempt with.
func (b *body) resume(cause error) error {
	cause = redact(cause)
	if !b.ranges || b.d.tries >= b.d.opts.Attempts {
		return cause
	}
	b.d.tries++
	b.watchdog.Stop() // the backoff is not a stall
	b.rate.pause()
	err := b.d.wait(b.ctx, cause)
	b.watchdog.Reset(b.d.opts.IdleTimeout)
	b.rate.resume()
	if err != nil {
		return err
	}
	resp, err := b.get(fmt.Sprintf("bytes=%d-", b.off))
	if err != nil {
		return fmt.Errorf("%w (resume failed: %v)", cause, err)
	}
	want := fmt.Sprintf("bytes %d-%d/%d", b.off, b.total-1, b.total)
	if resp.StatusCode != http.StatusPartialContent || resp.Header.Get("Content-Range") != want {
		resp.Body.Close()
		return fmt.Errorf("%w (server could not resume: %s)", cause, resp.Status)
	}
	b.resp.Body.Close()
	b.resp = resp
	return nil
}

func (b *body) stopTimers() {
	b.watchdog.Stop()
	b.rate.pause()
}

func (b *body) close() {
	b.stopTimers()
	if b.resp != nil {
		b.resp.Body.Close()
	}
}

// redact strips the query (the signature) from URLs in net/http errors.
func redact(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	u, perr := url.Parse(ue.URL)
	if perr != nil {
		return &url.Error{Op: ue.Op, URL: "<archive URL>", Err: ue.Err}
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return &url.Error{Op: ue.Op, URL: u.String(), Err: ue.Err}
}
