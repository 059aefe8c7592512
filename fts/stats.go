package fts

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/index"
)

// Stats, when a TableRequest carries one, receive what the search of a
// table did, for explaining it: the candidates the filter left (its steps
// as they ran), the records that matched the words, the hits kept, and
// the time of each stage since the search started. A search without Stats
// reads no clock and counts nothing for them.
type Stats struct {
	// Filter is the filter's plan as it ran; Candidates are its rows.
	Filter     *index.ExplainNode
	Candidates uint64
	// Terms counts the vocabulary terms the query words matched, typo
	// variants and completions included, in Columns columns searched;
	// Matched the records that hold the words (as the total counts them),
	// and Scored those whose score was computed: fewer when the others
	// could not reach the k best.
	Terms, Columns  int
	Matched, Scored uint64
	// Hits is how many of the best the search kept.
	Hits int
	// CandidatesAt, ScoredAt and RankedAt are when each stage ended,
	// since the search started.
	CandidatesAt, ScoredAt, RankedAt time.Duration
	// Untraced runs the filter as a search without Stats does, leaving
	// Filter nil: the counts and times above cost a few clock reads,
	// tracing every step of the filter costs more.
	Untraced bool

	start time.Time
}

// candidates runs the filter's plan, explained when s is not nil.
func (s *Stats) candidates(ctx context.Context, src Source, filter index.Node) (*roaring.Bitmap, error) {
	plan := index.Compile(filter)
	if s == nil {
		return plan.Execute(ctx, src)
	}
	s.start = time.Now()
	if s.Untraced {
		cands, err := plan.Execute(ctx, src)
		if err != nil {
			return nil, err
		}
		s.Candidates, s.CandidatesAt = cands.GetCardinality(), time.Since(s.start)
		return cands, nil
	}
	cands, tree, err := plan.Explain(ctx, src)
	if err != nil {
		return nil, err
	}
	s.Filter, s.Candidates, s.CandidatesAt = tree, cands.GetCardinality(), time.Since(s.start)
	return cands, nil
}

// scored notes the end of scoring: the terms searched, the records
// matched and those scored.
func (s *Stats) scored(x *scorer, matched, scored uint64) {
	if s == nil {
		return
	}
	for _, w := range x.words {
		s.Terms += len(w)
	}
	s.Columns = len(x.targets)
	s.Matched, s.Scored, s.ScoredAt = matched, scored, time.Since(s.start)
}

// ranked notes the end of ranking: the hits kept.
func (s *Stats) ranked(hits []RowScore) {
	if s != nil {
		s.Hits, s.RankedAt = len(hits), time.Since(s.start)
	}
}

// String describes the settings of a search without its words, which are
// values of the request: how many words, the fuzziness, prefix and
// highlighting, and the page.
func (q *Query) String() string {
	words := "words"
	if len(q.words) == 1 {
		words = "word"
	}
	s := fmt.Sprintf("%d %s, fuzziness %d", len(q.words), words, q.fuzziness)
	if q.phrase {
		s += ", prefix phrase"
	}
	if q.highlight {
		s += ", highlight"
	}
	s += "; size " + strconv.Itoa(q.Size)
	if q.Offset > 0 {
		s += ", offset " + strconv.Itoa(q.Offset)
	}
	return s
}
