package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// runLinks holds every link of the dashboard to what a reader can open: a link into the docs
// names a page that exists and an anchor that one of its headings makes (GitHub's rule), and no
// link points at an address a browser cannot reach or read (an agent's host:port, whose
// /status needs a bearer token).
//
//	deploycheck links --dashboard D.json --docs-root REPO
func runLinks(c *checker, args []string) {
	fs := flag.NewFlagSet("links", flag.ExitOnError)
	dashboard := fs.String("dashboard", "", "dashboard JSON")
	root := fs.String("docs-root", "", "the repository root (links are relative to it: docs/...)")
	fs.Parse(args)
	d, err := readJSON(*dashboard)
	if err != nil {
		c.fatal(err)
		return
	}
	var urls []string
	var walk func(v interface{})
	walk = func(v interface{}) {
		switch t := v.(type) {
		case map[string]interface{}:
			for k, e := range t {
				if u, ok := e.(string); ok && k == "url" {
					urls = append(urls, u)
				}
				walk(e)
			}
		case []interface{}:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(d)
	c.check(len(urls) >= 5, "only %d links found in %s", len(urls), *dashboard)
	anchors := map[string]map[string]bool{}
	for _, u := range urls {
		if !c.check(!strings.HasPrefix(u, "http://${") && !strings.Contains(u, ":9500"),
			"link %q points at an agent's address: a browser cannot reach it, and /status needs a token", u) {
			continue
		}
		if !strings.HasPrefix(u, "docs/") {
			c.check(strings.HasPrefix(u, "/d/") || strings.HasPrefix(u, "https://"),
				"link %q is neither into docs/ nor a dashboard nor https", u)
			continue
		}
		page, anchor, _ := strings.Cut(u, "#")
		if _, seen := anchors[page]; !seen {
			text, err := os.ReadFile(filepath.Join(*root, page))
			if !c.check(err == nil, "link %q: page %s: %v", u, page, err) {
				anchors[page] = nil
				continue
			}
			anchors[page] = headingAnchors(string(text))
		}
		if anchors[page] == nil || anchor == "" {
			continue
		}
		c.check(anchors[page][anchor], "link %q: no heading of %s makes the anchor #%s", u, page, anchor)
	}
}

// headingAnchors are the anchors GitHub gives a page's headings: lower case, punctuation other
// than '-' and '_' dropped, spaces to '-', a repeated anchor numbered -1, -2, ... Headings inside
// fenced code blocks are not headings.
func headingAnchors(text string) map[string]bool {
	drop := regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
	out := map[string]bool{}
	count := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		a := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		if n := count[a]; n > 0 {
			out[a+"-"+itoa(n)] = true
		} else {
			out[a] = true
		}
		count[a]++
	}
	return out
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}
