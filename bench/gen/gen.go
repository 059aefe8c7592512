// Package gen generates the benchmark dataset of BENCHMARKS.md: a users
// table of NumUsers rows and a docs table of N rows linking to it, and the
// query files that go with them. Same seed and vocabulary, same data.
//
// Record i of a table is drawn from its own random stream, so records can
// be made in any order, one at a time, and a prefix of a larger dataset is
// the smaller dataset. Records are the maps a JSON decoder with UseNumber
// would give: json.Number for numbers, RFC 3339 strings for datetimes,
// []any of strings for tags.
package gen

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config sets the size, seed and vocabulary of a dataset.
type Config struct {
	// N is the number of docs.
	N int
	// Seed picks the dataset.
	Seed int64
	// Words is the vocabulary of titles and bodies; nil means LoadWords().
	// It is ranked for the Zipf draws by the seed, so its order does not
	// matter.
	Words []string
}

// NumUsers is the size of the users table.
const NumUsers = 10_000

// Categories are the values of docs.category, most frequent first (Zipf
// with exponent 1.2: the first holds about 35% of docs, the last 1%).
var Categories = []string{
	"books", "music", "movies", "games", "electronics",
	"computers", "home", "garden", "tools", "toys",
	"sports", "outdoors", "health", "beauty", "clothing",
	"shoes", "jewelry", "food", "pets", "automotive",
}

// NumTags is the number of distinct tags; a doc has 1 to 5 of them.
const NumTags = 200

// Tag returns the name of tag k (0 ≤ k < NumTags); lower k are more
// frequent.
func Tag(k int) string { return fmt.Sprintf("tag%03d", k) }

// Epoch and End bound created_at: five years, uniform, whole seconds.
var (
	Epoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	End   = Epoch.AddDate(5, 0, 0)
)

// The price is lognormal: exp(priceMu + priceSigma·Z) rounded to cents, so
// its median is about 20.
const (
	priceMu    = 3.0
	priceSigma = 1.0
)

// PriceQuantile returns the price below which a fraction q of docs fall
// (0 < q < 1), which sets the selectivity of price ranges.
func PriceQuantile(q float64) float64 {
	return round2(math.Exp(priceMu + priceSigma*math.Sqrt2*math.Erfinv(2*q-1)))
}

// DateQuantile returns the created_at before which a fraction q of docs
// fall.
func DateQuantile(q float64) time.Time {
	return Epoch.Add(time.Duration(q * float64(End.Sub(Epoch)))).Truncate(time.Second)
}

// Random streams, one per kind of draw.
const (
	streamWords uint64 = iota + 1
	streamUsers
	streamDocs
	streamQueries
)

// Zipf parameters of the word draws: P(rank k) ∝ (wordV+k)^-wordS.
const (
	wordS = 1.1
	wordV = 2
)

// Gen makes the records and queries of one dataset. It is safe for
// concurrent use.
type Gen struct {
	n    int
	seed uint64
	// words is the vocabulary by rank, most frequent first.
	words []string
	vocab map[string]bool
}

// New returns the generator of the dataset cfg describes.
func New(cfg Config) *Gen {
	words := cfg.Words
	if words == nil {
		words = LoadWords()
	}
	g := &Gen{n: cfg.N, seed: uint64(cfg.Seed), vocab: make(map[string]bool, len(words))}
	for _, w := range words {
		if !g.vocab[w] {
			g.vocab[w] = true
			g.words = append(g.words, w)
		}
	}
	g.rank()
	return g
}

// rank orders the vocabulary for the Zipf draws: words of the shipped
// common-word list first, so that a large dictionary's frequent words are
// ordinary ones, then the rest; each part shuffled by the seed.
func (g *Gen) rank() {
	common := map[string]bool{}
	for _, w := range ShippedWords() {
		common[w] = true
	}
	slices.Sort(g.words)
	var head, tail []string
	for _, w := range g.words {
		if common[w] {
			head = append(head, w)
		} else {
			tail = append(tail, w)
		}
	}
	r := g.rng(streamWords, 0)
	r.Shuffle(len(head), func(i, j int) { head[i], head[j] = head[j], head[i] })
	r.Shuffle(len(tail), func(i, j int) { tail[i], tail[j] = tail[j], tail[i] })
	g.words = append(head, tail...)
}

// Word returns the word of a rank: 0 is the most frequent.
func (g *Gen) Word(rank int) string { return g.words[rank] }

// VocabSize returns the number of distinct words.
func (g *Gen) VocabSize() int { return len(g.words) }

// InVocab reports whether w is a word of the vocabulary.
func (g *Gen) InVocab(w string) bool { return g.vocab[w] }

// rng returns the random stream of item i of a kind.
func (g *Gen) rng(stream uint64, i int) *rand.Rand {
	return rand.New(rand.NewPCG(g.seed, splitmix(stream<<48^uint64(i))))
}

// splitmix scatters consecutive numbers over 64 bits, so that neighbouring
// records seed unrelated PCG streams.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// UserID is the record id of user i.
func UserID(i int) string { return fmt.Sprintf("u%05d", i) }

// DocID is the record id of doc i.
func DocID(i int) string { return fmt.Sprintf("d%08d", i) }

var firstNames = strings.Fields(`
	ada alan alice amara anna ben carla chen dara david elena emma felix
	grace hana ivan jamal jane jonas julia karim kate leo lina lucas maria
	mateo mia nadia noah olga omar paul priya rosa sam sara sofia tariq
	tom uma victor wei yara yusuf zoe`)

var lastNames = strings.Fields(`
	adams baker bauer chen costa cruz diaz evans fischer garcia gomez
	hall ito jensen kim kowalski lee lopez martin meyer moreau nakamura
	nguyen novak oliveira park patel petrov quinn rossi santos schmidt
	silva smith suzuki tanaka taylor walker wang weber young zhang`)

// User returns user i (0 ≤ i < NumUsers): id, name, email.
func (g *Gen) User(i int) map[string]any {
	r := g.rng(streamUsers, i)
	first, last := firstNames[r.IntN(len(firstNames))], lastNames[r.IntN(len(lastNames))]
	return map[string]any{
		"id":    UserID(i),
		"name":  title(first) + " " + title(last),
		"email": first + "." + last + strconv.Itoa(i) + "@example.com",
	}
}

func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// Doc returns doc i (0 ≤ i): id and every column of DocsColumns. Ratings
// are uniform over 0.0, 0.1, … 5.0, so a fraction q of docs rate below
// about 5q.
func (g *Gen) Doc(i int) map[string]any {
	r := g.rng(streamDocs, i)
	words := g.wordDraw(r)
	ttl := g.text(words, 3+r.IntN(6))
	body := g.text(words, 30+r.IntN(171))
	category := Categories[rand.NewZipf(r, 1.2, 1, uint64(len(Categories)-1)).Uint64()]
	tagDraw := rand.NewZipf(r, 1.1, 4, NumTags-1)
	tagRows := make([]int, 0, 5)
	for want := 1 + r.IntN(5); len(tagRows) < want; {
		if k := int(tagDraw.Uint64()); !slices.Contains(tagRows, k) {
			tagRows = append(tagRows, k)
		}
	}
	tags := make([]any, len(tagRows))
	for j, k := range tagRows {
		tags[j] = Tag(k)
	}
	price := max(0.01, round2(math.Exp(priceMu+priceSigma*r.NormFloat64())))
	rating := r.IntN(51)
	views := rand.NewZipf(r, 1.3, 5, 10_000_000).Uint64()
	created := Epoch.Add(time.Duration(r.Int64N(int64(End.Sub(Epoch)/time.Second))) * time.Second)
	active := r.Float64() < 0.7
	owner := int(rand.NewZipf(r, 1.1, 10, NumUsers-1).Uint64())
	return map[string]any{
		"id":         DocID(i),
		"title":      ttl,
		"body":       body,
		"category":   category,
		"tags":       tags,
		"price":      json.Number(strconv.FormatFloat(price, 'f', -1, 64)),
		"rating":     json.Number(strconv.FormatFloat(float64(rating)/10, 'f', -1, 64)),
		"views":      json.Number(strconv.FormatUint(views, 10)),
		"created_at": created.Format(time.RFC3339),
		"active":     active,
		"owner":      UserID(owner),
	}
}

// Users calls fn with each user in order; an error from fn stops the walk
// and is returned. The maps are fn's to keep.
func (g *Gen) Users(fn func(map[string]any) error) error {
	for i := range NumUsers {
		if err := fn(g.User(i)); err != nil {
			return err
		}
	}
	return nil
}

// Docs calls fn with each of the N docs in order; an error from fn stops
// the walk and is returned. The maps are fn's to keep.
func (g *Gen) Docs(fn func(map[string]any) error) error {
	for i := range g.n {
		if err := fn(g.Doc(i)); err != nil {
			return err
		}
	}
	return nil
}

// wordDraw returns the Zipf draw of word ranks on r.
func (g *Gen) wordDraw(r *rand.Rand) *rand.Zipf {
	return rand.NewZipf(r, wordS, wordV, uint64(len(g.words)-1))
}

// text joins n drawn words with spaces.
func (g *Gen) text(words *rand.Zipf, n int) string {
	var sb strings.Builder
	for j := range n {
		if j > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(g.words[words.Uint64()])
	}
	return sb.String()
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }
