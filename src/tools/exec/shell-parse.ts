/** Every simple command a `sh -c` string can run, read by the POSIX shell grammar, or the construct that keeps it from
 * being proven. It accepts a subset that dash and bash (as `sh`) read the same way: lists and pipelines, `( … )`,
 * `{ …; }`, `if`, `while`, `until` and `for`, quotes and escapes, comments, `$name`, `${name}` and `$( … )` at any
 * depth, redirections to `/dev/null` or between descriptors, input from files and here-documents that expand nothing.
 * Anything else (backticks, `$(( … ))`, `case`, functions, `$'…'`, a `\` at a line's end, a write to a file…) is
 * refused, never guessed at: the allowlist it serves must ask about what it cannot prove. Linear in the text and
 * bounded in length and depth, so no command can hold the event loop. */

/** One simple command: its words as written (quotes kept), and those words joined by single spaces. */
export interface SimpleCommand {
  words: string[];
  text: string;
}

export type ParsedCommands = { commands: SimpleCommand[] } | { unproven: string };

export function parseCommands(source: string): ParsedCommands {
  if (source.length > MAX_LENGTH)
    return { unproven: `a command longer than ${MAX_LENGTH.toLocaleString("en")} characters` };
  try {
    return { commands: new Parser(source).program() };
  } catch (err) {
    if (err instanceof Unproven) return { unproven: err.message };
    throw err;
  }
}

/** Why a spelling is refused; the message completes "pincer cannot prove what it runs: …". */
class Unproven extends Error {}

const MAX_DEPTH = 32;
/** Parsing is linear, but an allowlist has no business with pages of script: those are asked about. */
const MAX_LENGTH = 20_000;
const BLANK = /[ \t]/;
/** Characters that end an unquoted word. */
const METACHAR = /[ \t\n;&|<>()]/;
/** Reserved words in command position (bash's too), recognised only when followed by a delimiter. */
const RESERVED =
  /(?:if|then|else|elif|fi|do|done|case|esac|while|until|for|in|function|select|time|coproc|\{|\}|!|\[\[|\]\])(?=[ \t\n;&|<>()]|$)/y;
const SIMPLE_PARAMETER = /^#?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+)$|^[@*#?$!0-9-]$/;
const TARGET_OF_WRITE = "/dev/null";
export const WRITES_TO_FILE = "it writes to a file (>)";

interface HereDoc {
  delimiter: string;
  stripTabs: boolean;
  expands: boolean;
  depth: number;
}

class Parser {
  private i = 0;
  private depth = 0;
  private readonly commands: SimpleCommand[] = [];
  private readonly pending: HereDoc[] = [];

  constructor(private readonly s: string) {}

  program(): SimpleCommand[] {
    this.list(new Set(), false);
    if (this.i < this.s.length) throw new Unproven(`"${this.s[this.i]}" where a command should start`);
    if (this.pending.length > 0) throw new Unproven("a here-document with no body");
    return this.commands;
  }

  /** and-or lists up to a reserved word in `stops`, a `)` when `inParens`, or the end. */
  private list(stops: ReadonlySet<string>, inParens: boolean): void {
    if (++this.depth > MAX_DEPTH) throw new Unproven(`more than ${MAX_DEPTH} levels of nesting`);
    for (;;) {
      this.separators();
      if (this.i >= this.s.length || (inParens && this.s[this.i] === ")")) break;
      const word = this.reservedAhead();
      if (word !== undefined && stops.has(word)) break;
      const before = this.i;
      this.andOr();
      if (this.i === before) throw new Unproven(`"${this.s[this.i]}" where a command should start`);
    }
    this.depth--;
  }

  /** Skips blanks, comments and the separators `;`, `&` and newlines (reading due here-documents). */
  private separators(): void {
    for (;;) {
      this.blanks();
      const c = this.s[this.i];
      if (c === "\n") this.newline();
      else if ((c === ";" || c === "&") && !/^(?:;;|;&|&&|&>)/.test(this.s.slice(this.i, this.i + 2))) this.i++;
      else return;
    }
  }

  private andOr(): void {
    this.pipeline();
    for (;;) {
      this.blanks();
      const op = this.s.slice(this.i, this.i + 2);
      if (op !== "&&" && op !== "||") return;
      this.i += 2;
      this.linebreaks();
      this.pipeline();
    }
  }

  private pipeline(): void {
    this.blanks();
    if (this.reservedAhead() === "!") this.i++;
    for (;;) {
      this.command();
      this.blanks();
      if (this.s.startsWith("|&", this.i)) throw new Unproven("|& (bash only)");
      if (this.s[this.i] !== "|" || this.s[this.i + 1] === "|") return;
      this.i++;
      this.linebreaks();
    }
  }

  private command(): void {
    this.blanks();
    if (this.s[this.i] === "(") {
      if (this.s[this.i + 1] === "(") throw new Unproven("(( … )) arithmetic");
      this.i++;
      this.list(new Set(), true);
      this.expect(")");
      this.redirectsOnly();
      return;
    }
    const word = this.reservedAhead();
    if (word === undefined) {
      this.simple();
      return;
    }
    this.i += word.length;
    if (word === "{") {
      this.list(new Set(["}"]), false);
      this.expectWord("}");
    } else if (word === "if") {
      for (let elif = true; elif; ) {
        this.list(new Set(["then"]), false);
        this.expectWord("then");
        this.list(new Set(["elif", "else", "fi"]), false);
        elif = this.reservedAhead() === "elif";
        if (elif) this.i += 4;
      }
      if (this.reservedAhead() === "else") {
        this.i += 4;
        this.list(new Set(["fi"]), false);
      }
      this.expectWord("fi");
    } else if (word === "while" || word === "until") {
      this.list(new Set(["do"]), false);
      this.doGroup();
    } else if (word === "for") {
      this.forLoop();
    } else {
      throw new Unproven(word === "case" ? "case … esac" : `"${word}" in that place`);
    }
    this.redirectsOnly();
  }

  private forLoop(): void {
    this.blanks();
    const name = this.word();
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Unproven(`"for ${name}"`);
    this.linebreaks();
    if (this.reservedAhead() === "in") {
      this.i += 2;
      for (;;) {
        this.blanks();
        const c = this.s[this.i];
        if (c === ";" || c === "\n") break;
        if (c === undefined || METACHAR.test(c)) throw new Unproven("a for loop's list");
        this.word();
      }
      if (this.s[this.i] === ";") this.i++;
    } else if (this.s[this.i] === ";") this.i++;
    this.linebreaks();
    this.doGroup();
  }

  private doGroup(): void {
    this.expectWord("do");
    this.list(new Set(["done"]), false);
    this.expectWord("done");
  }

  private simple(): void {
    const words: string[] = [];
    for (;;) {
      this.blanks();
      const c = this.s[this.i];
      if (c === undefined || c === "\n" || c === ";" || c === "|" || c === ")") break;
      if (c === "(") throw new Unproven(words.length > 0 ? "a function definition" : '"("');
      if (c === "&" && this.s[this.i + 1] !== ">") break;
      if (!this.redirect()) words.push(this.word());
    }
    if (words.length > 0) this.commands.push({ words, text: words.join(" ") });
  }

  /** Redirections after a compound command; a word there is not something both shells read alike. */
  private redirectsOnly(): void {
    for (;;) {
      this.blanks();
      if (!this.redirect()) break;
    }
    const c = this.s[this.i];
    if (c !== undefined && !METACHAR.test(c)) throw new Unproven("a word after a compound command");
  }

  /** Parses a redirection at the cursor, if one is there. */
  private redirect(): boolean {
    const m = /(?:[0-9]*)(<<<|<<-|<<|<>|<&|>&|>>|>\||<|>)|(&>>|&>)/y;
    m.lastIndex = this.i;
    const match = m.exec(this.s);
    if (!match) return false;
    this.i = m.lastIndex;
    const op = match[1] ?? match[2];
    this.blanks();
    if (op === "<<<" || op === "<>") throw new Unproven(op === "<<<" ? "<<< (bash only)" : "<> opens a file to write");
    if (op === "<<" || op === "<<-") return this.hereDoc(op === "<<-");
    const target = this.word();
    if (op === "<") return true;
    if (op === "<&" || op === ">&") {
      if (/^(?:[0-9]+|-)$/.test(target)) return true;
      throw new Unproven(`${op}${target} writes to a file`);
    }
    if (target !== TARGET_OF_WRITE) throw new Unproven(WRITES_TO_FILE);
    // `cmd &>/dev/null` is bash's redirection but dash's `cmd &` then `>/dev/null`: alike only when nothing follows.
    if (op.startsWith("&")) {
      this.blanks();
      const next = this.s[this.i];
      if (next !== undefined && !/[\n;|)&]/.test(next)) throw new Unproven(`words after ${op}`);
    }
    return true;
  }

  private hereDoc(stripTabs: boolean): boolean {
    const start = this.i;
    const raw = this.word();
    const quoted = /['"\\]/.test(raw);
    if (/[$`]/.test(raw)) throw new Unproven("a here-document delimiter with $ or `");
    const delimiter = raw.replace(/\\(.)|['"]/gs, "$1");
    if (delimiter === "" || this.i === start) throw new Unproven("a here-document without a delimiter");
    this.pending.push({ delimiter, stripTabs, expands: !quoted, depth: this.depth });
    return true;
  }

  /** A newline token: due here-documents' bodies follow it. */
  private newline(): void {
    this.i++;
    for (const doc of this.pending.splice(0)) {
      if (doc.depth !== this.depth) throw new Unproven("a here-document inside $( … ) or across lines");
      for (;;) {
        if (this.i >= this.s.length) break;
        const end = this.s.indexOf("\n", this.i);
        const line = this.s.slice(this.i, end === -1 ? this.s.length : end);
        this.i = end === -1 ? this.s.length : end + 1;
        if ((doc.stripTabs ? line.replace(/^\t+/, "") : line) === doc.delimiter) break;
        if (doc.expands && /[$`\\]/.test(line)) throw new Unproven("a here-document that expands $, ` or \\");
      }
    }
  }

  /** One word as written; `$( … )` inside it are parsed as commands. */
  private word(): string {
    const start = this.i;
    const s = this.s;
    while (this.i < s.length && !METACHAR.test(s[this.i])) {
      const c = s[this.i];
      if (c === "\\") this.escaped();
      else if (c === "'") {
        const end = s.indexOf("'", this.i + 1);
        if (end === -1) throw new Unproven("an unclosed '");
        this.noNewlineWhilePending(s.slice(this.i, end));
        this.i = end + 1;
      } else if (c === '"') this.doubleQuoted();
      else if (c === "`") throw new Unproven("backticks (write $( … ) instead)");
      else if (c === "$") this.dollar(false);
      else this.i++;
    }
    if (this.i === start) throw new Unproven(s[this.i] === undefined ? "a missing word" : `"${s[this.i]}"`);
    return s.slice(start, this.i);
  }

  private escaped(): void {
    const next = this.s[this.i + 1];
    if (next === "\n") throw new Unproven("a \\ at the end of a line");
    if (next === undefined) throw new Unproven("a \\ at the very end");
    this.i += 2;
  }

  private doubleQuoted(): void {
    const s = this.s;
    this.i++;
    for (;;) {
      const c = s[this.i];
      if (c === undefined) throw new Unproven('an unclosed "');
      if (c === '"') break;
      if (c === "\\") this.escaped();
      else if (c === "`") throw new Unproven("backticks (write $( … ) instead)");
      else if (c === "$") this.dollar(true);
      else {
        if (c === "\n") this.noNewlineWhilePending("\n");
        this.i++;
      }
    }
    this.i++;
  }

  private dollar(inDoubleQuotes: boolean): void {
    const s = this.s;
    const next = s[this.i + 1];
    if (next === "(") {
      if (s[this.i + 2] === "(") throw new Unproven("$(( … )) arithmetic");
      this.i += 2;
      this.list(new Set(), true);
      this.expect(")");
    } else if (next === "{") {
      const end = s.indexOf("}", this.i + 2);
      if (end === -1 || !SIMPLE_PARAMETER.test(s.slice(this.i + 2, end)))
        throw new Unproven("$" + "{ … } with an operator");
      this.i = end + 1;
    } else if (next !== undefined && /[A-Za-z_]/.test(next)) {
      this.i += 2;
      while (this.i < s.length && /[A-Za-z0-9_]/.test(s[this.i])) this.i++;
    } else if (next !== undefined && /[0-9@*#?$!-]/.test(next)) {
      this.i += 2;
    } else if (!inDoubleQuotes && (next === "'" || next === '"')) {
      throw new Unproven(`$${next}…${next} quoting (bash only)`);
    } else if (next === "[") {
      throw new Unproven("$[ … ] arithmetic (bash only)");
    } else {
      this.i++;
    }
  }

  private noNewlineWhilePending(text: string): void {
    if (this.pending.length > 0 && text.includes("\n")) throw new Unproven("a quoted newline before a here-document");
  }

  private blanks(): void {
    const s = this.s;
    for (;;) {
      while (BLANK.test(s[this.i] ?? "")) this.i++;
      if (s[this.i] === "\\" && s[this.i + 1] === "\n") throw new Unproven("a \\ at the end of a line");
      if (s[this.i] !== "#") return;
      // At a word's start `#` opens a comment up to the newline (in a word it is a letter).
      const end = s.indexOf("\n", this.i);
      this.i = end === -1 ? s.length : end;
    }
  }

  private linebreaks(): void {
    for (;;) {
      this.blanks();
      if (this.s[this.i] !== "\n") return;
      this.newline();
    }
  }

  private reservedAhead(): string | undefined {
    RESERVED.lastIndex = this.i;
    return RESERVED.exec(this.s)?.[0];
  }

  private expect(c: string): void {
    this.blanks();
    if (this.s[this.i] !== c) throw new Unproven(`a missing "${c}"`);
    this.i++;
  }

  private expectWord(word: string): void {
    this.separators();
    if (this.reservedAhead() !== word) throw new Unproven(`a missing "${word}"`);
    this.i += word.length;
  }
}
