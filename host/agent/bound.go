package agent

import (
	"fmt"
	"unicode/utf8"
)

// cutUTF8 returns the longest prefix of s of at most n bytes that does not split a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// boundOutput cuts a tool's output to max bytes, saying so and how to get the rest.
func boundOutput(out string, max int) string {
	if len(out) <= max {
		return out
	}
	return cutUTF8(out, max) + fmt.Sprintf("\n[output cut: the first %d of %d bytes are shown; ask for less at once, e.g. a smaller result or part of a file]", max, len(out))
}

// estimateTokens estimates the tokens of n bytes of text as n/4 (rounded up): about right for
// English and code with the common tokenizers, and on the high side for neither, which is
// enough to decide when to summarise with a margin (75% of the window).
func estimateTokens(n int) int {
	return (n + 3) / 4
}
