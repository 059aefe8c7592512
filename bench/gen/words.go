package gen

import (
	"os"
	"strings"

	"github.com/coppice-db/coppice/bench"
)

// SystemWordsPath is Debian's word list, installed by the package
// wamerican.
const SystemWordsPath = "/usr/share/dict/words"

// LoadWords returns the vocabulary of the dataset: the system word list
// when the machine has one, else the list shipped in bench/words.txt. Only
// words of lowercase ASCII letters are kept, each once, in the file's order.
// The two lists give different datasets for the same seed; pass Words in
// Config to pin one.
func LoadWords() []string {
	return loadWords(SystemWordsPath)
}

func loadWords(path string) []string {
	if b, err := os.ReadFile(path); err == nil {
		if w := cleanWords(string(b)); len(w) > 0 {
			return w
		}
	}
	return ShippedWords()
}

// ShippedWords returns the cleaned list of bench/words.txt.
func ShippedWords() []string {
	return cleanWords(bench.Words)
}

// cleanWords splits text into lines and keeps the distinct ones made of
// lowercase ASCII letters only (which drops proper nouns and possessives).
func cleanWords(text string) []string {
	seen := map[string]bool{}
	var out []string
	for line := range strings.Lines(text) {
		w := strings.TrimSpace(line)
		if w == "" || seen[w] || !lowerASCII(w) {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

func lowerASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}
