package wit_test

import (
	"strings"
	"testing"

	"atelier/sdk/wit"
)

// roundTrip prints every package of res, loads the text back and checks that printing the
// result gives the same text: the printer loses nothing the model holds.
func roundTrip(t *testing.T, name string, res *wit.Resolve) {
	t.Helper()
	text := wit.Print(res.Packages...)
	again, _, err := wit.LoadSource(name+".printed.wit", []byte(text))
	if err != nil {
		t.Errorf("%s: the printed WIT does not load: %v\n%s", name, err, numbered(text))
		return
	}
	pkgs := make([]*wit.Package, len(res.Packages))
	for i, p := range res.Packages {
		if pkgs[i] = again.Package(p.Name.String()); pkgs[i] == nil {
			t.Fatalf("%s: package %s lost in the round trip", name, p.Name)
		}
	}
	if text2 := wit.Print(pkgs...); text2 != text {
		t.Errorf("%s: printing the reloaded model differs:\n%s", name, firstDiff(text, text2))
	}
}

func numbered(text string) string {
	lines := strings.Split(text, "\n")
	for i := range lines {
		lines[i] = strings.Repeat(" ", 4-len(itoa(i+1))) + itoa(i+1) + " " + lines[i]
	}
	return strings.Join(lines, "\n")
}

func itoa(i int) string {
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}

// firstDiff shows the first line where a and b differ.
func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(la) && i < len(lb); i++ {
		if la[i] != lb[i] {
			return "line " + itoa(i+1) + ":\n  " + la[i] + "\n  " + lb[i]
		}
	}
	return "one text is a prefix of the other"
}
