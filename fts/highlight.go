package fts

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Highlight sizes, in characters.
const (
	// SnippetChars: a value of at most this many characters is returned
	// whole; a longer one is cut into fragments of at most about this many.
	SnippetChars = 100
	// fragmentLead is how much text a fragment keeps before its first match.
	fragmentLead = 30
	// MaxFragments caps the fragments returned for one value.
	MaxFragments = 5
)

// Highlight marks the words of text whose term satisfies matched with
// <em>…</em>. Matched words separated only by whitespace share one pair
// ("<em>New York</em> City"). With encodeHTML the text around and inside the
// markers is HTML-escaped (& < > " '); the markers are not.
//
// A text of at most SnippetChars characters comes back whole, as one
// snippet. A longer one comes back as up to MaxFragments fragments in text
// order, each a run of whole words of at most SnippetChars characters
// (longer only when one word is) starting a little before a match. It
// returns nil when no word matches: only fields that matched are
// highlighted.
func Highlight(text string, matched func(term string) bool, encodeHTML bool) []string {
	sc := highlightPool.Get().(*highlightScratch)
	defer sc.release()
	sc.toks = AppendTokens(sc.toks[:0], text)
	toks := sc.toks
	hit := grow(&sc.hit, len(toks))
	found := false
	for i, t := range toks {
		hit[i] = matched(t.Term)
		found = found || hit[i]
	}
	if !found {
		return nil
	}
	if utf8.RuneCountInString(text) <= SnippetChars {
		return []string{markup(text, 0, len(text), toks, hit, encodeHTML)}
	}
	// Character offsets of each word's start and end.
	rs, re := grow(&sc.rs, len(toks)), grow(&sc.re, len(toks))
	pos, chars := 0, 0
	for i, t := range toks {
		chars += utf8.RuneCountInString(text[pos:t.Start])
		rs[i] = chars
		chars += utf8.RuneCountInString(text[t.Start:t.End])
		re[i] = chars
		pos = t.End
	}
	var frags []string
	next := 0 // the first word the next fragment may use
	for m := range toks {
		if len(frags) == MaxFragments {
			break
		}
		if !hit[m] || m < next {
			continue
		}
		first, last := m, m
		for first > next && rs[m]-rs[first-1] <= fragmentLead && re[m]-rs[first-1] <= SnippetChars {
			first--
		}
		for last+1 < len(toks) && re[last+1]-rs[first] <= SnippetChars {
			last++
		}
		// Near the end of the text, spend the room left on more lead.
		for first > next && re[last]-rs[first-1] <= SnippetChars {
			first--
		}
		frags = append(frags, markup(text, toks[first].Start, toks[last].End, toks[first:last+1], hit[first:last+1], encodeHTML))
		next = last + 1
	}
	return frags
}

// highlightScratch is the working memory of Highlight, pooled: every hit
// of every search highlights its searched values, and a body's tokens and
// offsets would otherwise be allocated afresh for each.
type highlightScratch struct {
	toks   []Token
	hit    []bool
	rs, re []int
}

var highlightPool = sync.Pool{New: func() any { return new(highlightScratch) }}

// maxPooledTokens is the most tokens a pooled scratch keeps room for: a
// rare huge value does not pin its buffers.
const maxPooledTokens = 1 << 14

// release returns the scratch to the pool, dropping its tokens' terms,
// which may share memory with the highlighted text.
func (sc *highlightScratch) release() {
	if cap(sc.toks) > maxPooledTokens {
		return
	}
	clear(sc.toks)
	sc.toks = sc.toks[:0]
	highlightPool.Put(sc)
}

// grow returns (*buf)[:n], reallocating *buf when it is too small; the
// contents are unspecified.
func grow[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n, n+n/4)
	}
	return (*buf)[:n]
}

// markup renders text[from:to], whose words are toks, with the words flagged
// in hit wrapped in markers.
func markup(text string, from, to int, toks []Token, hit []bool, encodeHTML bool) string {
	var b strings.Builder
	b.Grow(to - from + 16)
	write := func(s string) {
		if encodeHTML {
			htmlEscaper.WriteString(&b, s)
		} else {
			b.WriteString(s)
		}
	}
	pos := from
	for i := 0; i < len(toks); i++ {
		if !hit[i] {
			continue
		}
		j := i
		for j+1 < len(toks) && hit[j+1] && isSpace(text[toks[j].End:toks[j+1].Start]) {
			j++
		}
		write(text[pos:toks[i].Start])
		b.WriteString("<em>")
		write(text[toks[i].Start:toks[j].End])
		b.WriteString("</em>")
		pos = toks[j].End
		i = j
	}
	write(text[pos:to])
	return b.String()
}

func isSpace(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return !unicode.IsSpace(r) }) < 0
}

// htmlEscaper escapes the five characters that matter in HTML text and
// attribute values.
var htmlEscaper = strings.NewReplacer(
	"&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;",
)
