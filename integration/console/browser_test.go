//go:build integration

package console

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// browser is one headless Chromium for the whole suite; each user gets a
// tab of their own (a tab's sessionStorage is its own, so each holds its
// own sign-in).
type browser struct {
	ctx    context.Context
	cancel func()
}

// chromiumPath finds Debian's chromium; the tests fail, not skip, without it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium not found: the console's browser tests need Debian's chromium " +
		"(apt-get install -y chromium; .ci/run installs it), or CHROMIUM=/path/to/chrome")
	return ""
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1366, 860),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	// Start the browser now, so that a failure to start shows here.
	if err := chromedp.Do(bctx); err != nil {
		cancelAlloc()
		t.Fatalf("starting chromium: %v", err)
	}
	b := &browser{ctx: bctx, cancel: func() { cancelBrowser(); cancelAlloc() }}
	t.Cleanup(b.cancel)
	return b
}

// tab is one browser tab at a base URL.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string
}

func (b *browser) tab(t *testing.T, base string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	// Open the tab with a context that lives as long as the tab: the
	// first call on a context ties the tab's life to its context, and the
	// later ones have timeouts.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	return &tab{t: t, ctx: ctx, base: base}
}

// in is the tab for the (sub)test t: failures end t.
func (tb *tab) in(t *testing.T) *tab {
	c := *tb
	c.t = t
	return &c
}

// do runs actions, bounded to 30 s together.
func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	tb.doWithin(30*time.Second, actions...)
}

func (tb *tab) doWithin(d time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.fail(err)
	}
}

// fail ends the test with what the page showed.
func (tb *tab) fail(err error) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	url, _ := chromedp.Run(ctx, chromedp.Location())
	body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	tb.t.Fatalf("browser: %v\nat %s, the page says:\n%s", err, url, body)
}

func (tb *tab) open(path string) { tb.t.Helper(); tb.do(chromedp.Navigate(tb.base + path)) }

// waitJS waits until the expression is true.
func (tb *tab) waitJS(js string, d time.Duration) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, d)
	defer cancel()
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(50*time.Millisecond)))
		if err == nil {
			return
		}
		// A page load (a redirect through the OIDC issuer) ends a poll
		// under way: poll again in the new page.
		if ctx.Err() == nil && (strings.Contains(err.Error(), "navigated or closed") || strings.Contains(err.Error(), "Cannot find context")) {
			continue
		}
		tb.fail(fmt.Errorf("waiting for %s: %w", js, err))
	}
}

// waitText waits until the element sel holds text.
func (tb *tab) waitText(sel, text string, d time.Duration) {
	tb.t.Helper()
	tb.waitJS(fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.innerText.includes(%q); })()`, sel, text), d)
}

// eval returns the value of a JavaScript expression.
func eval[T any](tb *tab, js string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		tb.fail(fmt.Errorf("evaluating %s: %w", js, err))
	}
	return v
}

func (tb *tab) text(sel string) string {
	tb.t.Helper()
	tb.waitJS(fmt.Sprintf(`!!document.querySelector(%q)`, sel), 10*time.Second)
	return eval[string](tb, fmt.Sprintf(`document.querySelector(%q).innerText`, sel))
}

// setValue sets a textarea or input the way typing would, so that React
// sees the change.
func (tb *tab) setValue(sel, value string) {
	tb.t.Helper()
	tb.do(chromedp.WaitVisible(chromedp.CSS(sel)))
	eval[bool](tb, fmt.Sprintf(`(() => {
		const e = document.querySelector(%q);
		const proto = e instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
		Object.getOwnPropertyDescriptor(proto, "value").set.call(e, %q);
		e.dispatchEvent(new Event("input", { bubbles: true }));
		return true;
	})()`, sel, value))
}

func (tb *tab) click(sel string) {
	tb.t.Helper()
	tb.do(chromedp.WaitVisible(chromedp.CSS(sel)), chromedp.Click(chromedp.CSS(sel)))
}

// location is the path the app shows now.
func (tb *tab) location() string { tb.t.Helper(); return eval[string](tb, `location.pathname`) }

// pageText is everything the page shows.
func (tb *tab) pageText() string { tb.t.Helper(); return eval[string](tb, `document.body.innerText`) }

// signIn signs in with a token through the sign-in page.
func (tb *tab) signIn(token string) {
	tb.t.Helper()
	tb.open("/")
	tb.setValue("#token", token)
	tb.click(`form[aria-label="Sign in with a token"] button[type=submit]`)
	tb.waitJS(`location.pathname !== "/signin" && !!document.querySelector("main h1")`, 20*time.Second)
}

// screenshot writes a full-page PNG to $TRAINYARD_SCREENSHOTS (make
// screenshots points it at web/screenshots) or the test's temp dir.
func (tb *tab) screenshot(name string, dark bool) {
	tb.t.Helper()
	dir := os.Getenv("TRAINYARD_SCREENSHOTS")
	if dir == "" {
		dir = tb.t.TempDir()
	}
	scheme := "light"
	if dark {
		scheme = "dark"
	}
	media := func(v string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}},
			})
			return err
		})
	}
	tb.do(media(scheme))
	// Two animation frames: the page has repainted in the new scheme.
	tb.waitJS(`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, 5*time.Second)
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.fail(err)
	}
	tb.do(media("light"))
	require.NotEmpty(tb.t, png)
	require.NoError(tb.t, os.MkdirAll(dir, 0o755))
	require.NoError(tb.t, os.WriteFile(filepath.Join(dir, name), png, 0o644))
}

func jsString(s string) string { return fmt.Sprintf("%q", s) }
