import { createTextFilter } from '../../src/modules/chat/text-filter.js';
import { BODY } from './latency.js';

/**
 * The chat text filter's cost per message, in process: `npx tsx bench/chat/text-filter.ts`.
 * Every direct message and chat message goes through it before anything else is done, so its
 * cost is taken from each send's share of a core (docs/chat.md, "The text filter"). Prints the
 * median of several rounds, in µs of CPU time per message, for each kind of text: CPU time of the
 * process rather than wall-clock time, so that other work on a shared machine counts less.
 */

/** 2,000 characters, the most a body holds. */
const LONG = 'We meet at the plaza after the race, then the whole crew goes to the lighthouse. '
  .repeat(25)
  .slice(0, 2000);

const KINDS: [name: string, texts: string[]][] = [
  ["clean, ASCII (the chat benchmark's body)", [BODY]],
  ['clean, accents and emoji', ['Ça va être génial 🎉 — the café by the naïve résumé stand, 8 pm?']],
  ['clean, Japanese', ['今夜の広場に来ますか？新しい帽子を持ってきてね。']],
  ['clean, 2,000 characters of ASCII', [LONG]],
  ['with a match', ['what the fuck is this']],
  [
    'with a disguised match (ⓕⓤⓒⓚ, f u c k, f́uck)',
    ['what the ⓕⓤⓒⓚ is this', 'f u c k this', 'f\u0301uck off'],
  ],
];

const ROUNDS = 15;
const CALLS = 20_000;

const filter = createTextFilter('mask');
const rows: string[] = [];
for (const [name, texts] of KINDS) {
  for (let call = 0; call < CALLS; call++) filter(texts[call % texts.length] as string);
  const perMessage: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const started = process.cpuUsage();
    for (let call = 0; call < CALLS; call++) filter(texts[call % texts.length] as string);
    const { user, system } = process.cpuUsage(started);
    perMessage.push((user + system) / CALLS);
  }
  perMessage.sort((a, b) => a - b);
  rows.push(`| ${name} | ${(perMessage[ROUNDS >> 1] as number).toFixed(2)} |`);
}
console.log(
  [`| Text | µs of CPU per message (median of ${ROUNDS} rounds) |`, '|---|---|', ...rows].join('\n'),
);
