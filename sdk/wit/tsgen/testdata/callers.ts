// Uses the callers' declarations of slides-go over Cap'n Web (`slides`: a resource handle is
// a stub with methods) and of todo-go in the JSON mapping (`todoJSON`, as Code Mode sees it).
async function capnweb(): Promise<number> {
  const deck: Deck = await slides.decks.open('talk');
  await deck.setTitle('Title');
  const index: number = await deck.addSlide({ title: 'One', body: '', layout: 'two-column', notes: null });
  await deck.moveSlide(index, 0);
  const info: DeckInfo = await deck.info();
  const updated: number | bigint = info['updated-ms'];
  const all: DeckInfo[] = await slides.decks.listDecks();
  // @ts-expect-error: a title is a string
  await deck.setTitle(1);
  // @ts-expect-error: not a layout
  await deck.addSlide({ title: 'x', body: '', layout: 'wide', notes: null });
  // @ts-expect-error: methods are on the handle, not on the interface
  await slides.decks.setTitle('x');
  return all.length + Number(updated);
}

async function json(): Promise<string> {
  const t: Todo = await todoJSON.add('milk');
  const done: Todo = await todoJSON.toggle(t.id);
  const list: Todo[] = await todoJSON.list();
  // @ts-expect-error: an id is a number
  await todoJSON.remove('1');
  return done.title + list.length;
}

export { capnweb, json };
