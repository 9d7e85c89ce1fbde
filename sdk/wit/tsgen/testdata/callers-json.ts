// Uses the callers' declarations of slides-go in the JSON mapping (`slidesJSON`: functions
// with resources are left out) and of todo-go over Cap'n Web (`todo`).
async function json(): Promise<number> {
  const decks: DeckInfo[] = await slidesJSON['decks.listDecks']();
  const gone: boolean = await slidesJSON['decks.deleteDeck']('talk');
  // @ts-expect-error: returns a resource, which JSON cannot carry: not declared
  await slidesJSON['decks.open']('talk');
  return decks[0].slides + Number(gone);
}

async function capnweb(): Promise<Sample> {
  const s: Sample = await todo.roundtrip({ id: 1, name: 'n', tags: ['a'], score: 0.5, done: false });
  // @ts-expect-error: tags is a list of strings
  await todo.roundtrip({ ...s, tags: [1] });
  return s;
}

export { json, capnweb };
