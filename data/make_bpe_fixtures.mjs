// Writes data/fixtures/bpe/cases.json: GPT-2's token ids of a corpus by two JavaScript tokenizers
// that ship GPT-2's files, gpt-3-encoder (a port of OpenAI's encoder.py) and js-tiktoken's "gpt2"
// encoding, refused unless both agree. tests/core/bpe_test.cpp checks attn's ids on data/gpt2/
// against them. Run by hand, never by the tests:
//
//   mkdir /tmp/npmbpe && cd /tmp/npmbpe && npm install gpt-3-encoder@1.1.4 js-tiktoken@1.0.21
//   node data/make_bpe_fixtures.mjs /tmp/npmbpe
//
// The texts avoid U+0085 and U+FEFF, where JavaScript's \s and Unicode's White_Space (Python's
// `regex`, which OpenAI's encoder.py and attn follow) disagree.
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const modules = process.argv[2];
if (!modules) {
  console.error("usage: node data/make_bpe_fixtures.mjs DIR (DIR/node_modules has gpt-3-encoder and js-tiktoken)");
  process.exit(2);
}
const require = createRequire(path.resolve(modules) + "/");
const gpt3 = require("gpt-3-encoder");
const { getEncoding } = require("js-tiktoken");
const tiktoken = getEncoding("gpt2");

const texts = [
  "The cat sat on the mat.",
  "Hello, world! How are you today?",
  "It's John's car; they're sure we'll go, I'm told you'd say they've won.",
  "IT'S JOHN'S CAR, THEY'RE HERE, WE'LL SEE",
  "don't won't can't shouldn't 'quoted' ''double''",
  "café naïve résumé Ångström Zürich façade crème brûlée",
  "e\u0301 a\u0308\u0304 n\u0303 combining marks, and Z\u0335\u0321a\u0336l\u0337g\u0338o",
  "東京都は日本の首都です。中文字符，标点符号！한국어 텍스트",
  "Привет, мир! Γειά σου κόσμε. مرحبا بالعالم. שלום עולם. नमस्ते दुनिया",
  "emoji 😀🎉🚀 family 👨‍👩‍👧‍👦 couple 👩‍❤️‍👨 flags 🇫🇷🇯🇵🇺🇸 skin 👍🏽 keycap 1️⃣",
  "numbers 123 4567890 3.14159 1,000,000 -42 1e-5 0x1F ½ ² Ⅻ ٣٤٥",
  "punctuation!!! ... ??? --- ((())) {}[] <<>> @#$%^&* ~`|\\",
  "int main() {\n    return a->b + c[i] * 2;  // done\n}\n",
  "def f(x):\n\tif x:\n\t\treturn [x ** 2 for x in range(10)]\n",
  "  \n  ",
  "trailing spaces   ",
  "   leading spaces",
  "a  b   c    d\n\ne\n \n f",
  "\r\n\r\nwindows lines\r\n",
  "nbsp\u00a0thin\u2009ideographic\u3000em\u2003space",
  "tabs\tand\u000bvertical\u000cfeeds",
  "https://example.com/path?q=1&r=two#frag user@mail.org",
  "The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX.",
  "supercalifragilisticexpialidocious antidisestablishmentarianism",
  "$100.00 €50 £3 ¥1000 ₹20",
  "½¾ ⅓ αβγ ∑∫√∞ ≠≤≥",
  "",
  " ",
  "a",
  "HE'S HERE. SHE'LL GO. It'S ODD. I'M OUT. WE'RE 'T",
  "'s 't 're 've 'm 'll 'd 'x '' ''s ?'s",
  "cafe\u0301 nai\u0308ve e\u0301\u0301 a\u0300\u0301\u0302",
  "Emoji: 😀 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷🇯🇵 ❤️ ✨",
  "\n\n\n",
  "  leading and   \n  mixed  \n  ",
  "tab\tafter word \t mixed \t\n end",
  "<|endoftext",
  "int main() { std::vector<int> v{1, 2, 3}; return v.size() == 3 ? 0 : 1; }",
  "mixed123abc 123abc abc123 a1b2c3 __init__ snake_case camelCase",
  // Names of JavaScript's Object.prototype: a port keeping its cache in a plain object trips on them.
  "constructor toString hasOwnProperty __proto__ valueOf",
];

const cases = texts.map((text) => {
  const a = gpt3.encode(text);
  const b = tiktoken.encode(text);
  if (JSON.stringify(a) !== JSON.stringify(b)) {
    throw new Error(`the two tokenizers disagree on ${JSON.stringify(text)}: ${a} vs ${b}`);
  }
  if (gpt3.decode(a) !== text) throw new Error(`gpt-3-encoder does not decode ${JSON.stringify(text)} back`);
  return { text, ids: a };
});
// <|endoftext|> as one token: js-tiktoken with the special token allowed (gpt-3-encoder spells it).
for (const text of ["before<|endoftext|>after", "end.<|endoftext|> Next", "<|endoftext|>",
                    "Hello<|endoftext|>World <|endoftext|> <|endoftext|><|endoftext|>end"]) {
  cases.push({ text, ids: tiktoken.encode(text, "all") });
}

const here = path.dirname(fileURLToPath(import.meta.url));
const out = {
  generator: "data/make_bpe_fixtures.mjs: gpt-3-encoder 1.1.4 and js-tiktoken 1.0.21 (gpt2), equal",
  cases,
};
const lines = cases.map((c) => "    " + JSON.stringify(c));
writeFileSync(
  path.join(here, "fixtures/bpe/cases.json"),
  `{\n  "generator": ${JSON.stringify(out.generator)},\n  "cases": [\n${lines.join(",\n")}\n  ]\n}\n`,
);
console.log(`wrote ${cases.length} cases`);
