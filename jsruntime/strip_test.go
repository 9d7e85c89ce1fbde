package jsruntime_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"atelier/jsruntime"
)

func TestStripTypeScript(t *testing.T) {
	js, err := jsruntime.Strip("a.ts", "enum Color { Red }\nexport function f(x: number): string { return String(x) as string }\ninterface I { a: number }\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{": number", ": string", "interface", " as string"} {
		if strings.Contains(js, gone) {
			t.Errorf("%q survived stripping:\n%s", gone, js)
		}
	}
	if !strings.Contains(js, "export function f(x)") {
		t.Errorf("export lost:\n%s", js)
	}
	if same, err := jsruntime.Strip("a.js", "let x: number = 1"); err != nil || same != "let x: number = 1" {
		t.Errorf("JavaScript is passed through unchanged: %q, %v", same, err)
	}
}

func TestStripSyntaxErrorPosition(t *testing.T) {
	_, err := jsruntime.Strip("agent.ts", "const a = 1;\nconst b: number = ;\n")
	var se *jsruntime.SyntaxError
	if !errors.As(err, &se) || len(se.Problems) != 1 {
		t.Fatalf("got %v", err)
	}
	p := se.Problems[0]
	if p.Line != 2 || p.Column != 19 || !strings.HasPrefix(err.Error(), "agent.ts:2:19: ") {
		t.Fatalf("got %+v (%v), want agent.ts:2:19", p, err)
	}
}

// A TypeScript snippet's runtime error and console stack point at the TypeScript source.
func TestExecuteCodeTypeScriptPositions(t *testing.T) {
	src := `type Item = { id: number };

interface Env { [name: string]: unknown }

export default async function (env: Env, ctx: unknown): Promise<number> {
  const items: Item[] = [{ id: 1 }];
  console.log(new Error("here").stack);
  const missing = items[5] as Item;
  return missing.id;
}
`
	res, err := engine(t).ExecuteCode(context.Background(), jsruntime.Code{Source: src, TypeScript: true}, jsruntime.Env{}, jsruntime.Limits{})
	var je *jsruntime.Error
	if !errors.As(err, &je) {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(je.Stack, "snippet.ts:9:") || je.Name != "TypeError" {
		t.Fatalf("error %#v, want a TypeError at snippet.ts:9", je)
	}
	if len(res.Console) != 1 || !strings.Contains(res.Console[0].Text, "snippet.ts:7:") {
		t.Fatalf("console %#v, want a stack at snippet.ts:7", res.Console)
	}
	_, err = engine(t).ExecuteCode(context.Background(), jsruntime.Code{Source: "export default (x: ) => 1", TypeScript: true}, jsruntime.Env{}, jsruntime.Limits{})
	if !errors.As(err, new(*jsruntime.SyntaxError)) || !strings.Contains(err.Error(), "snippet.ts:1:") {
		t.Fatalf("got %v", err)
	}
}
