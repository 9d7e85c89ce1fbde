package wit

import "reflect"

// SetListWord sets element i of the canonical list x (from MakeList) to the scalar whose
// canonical word is w, for tests that build canonical values.
func SetListWord(x reflect.Value, i int, w uint64) { setWord(x.Interface(), i, w) }
