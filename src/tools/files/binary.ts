/** NUL bytes, or many bytes that are neither text nor valid UTF-8, in the first 8 KB. */
export function looksBinary(bytes: Uint8Array): boolean {
  const sample = bytes.subarray(0, 8192);
  if (sample.includes(0)) return true;
  const text = new TextDecoder("utf-8").decode(sample);
  let odd = 0;
  for (const ch of text) {
    const code = ch.codePointAt(0) ?? 0;
    if (code === 0xfffd || (code < 32 && code !== 9 && code !== 10 && code !== 13 && code !== 27)) odd++;
  }
  // A sample cut in the middle of a multi-byte character adds one stray replacement character.
  return odd > Math.max(8, text.length * 0.1);
}

const SIGNATURES: Array<[string, number[]]> = [
  ["PNG image", [0x89, 0x50, 0x4e, 0x47]],
  ["JPEG image", [0xff, 0xd8, 0xff]],
  ["GIF image", [0x47, 0x49, 0x46, 0x38]],
  ["PDF document", [0x25, 0x50, 0x44, 0x46]],
  ["ZIP archive (or docx/xlsx/jar)", [0x50, 0x4b, 0x03, 0x04]],
  ["gzip archive", [0x1f, 0x8b]],
  ["ELF executable", [0x7f, 0x45, 0x4c, 0x46]],
  ["SQLite database", [0x53, 0x51, 0x4c, 0x69, 0x74, 0x65]],
  ["Ogg audio", [0x4f, 0x67, 0x67, 0x53]],
];

/** A human name for common binary formats, from their first bytes. */
export function describeBinary(bytes: Uint8Array): string | undefined {
  return SIGNATURES.find(([, magic]) => magic.every((b, i) => bytes[i] === b))?.[0];
}
