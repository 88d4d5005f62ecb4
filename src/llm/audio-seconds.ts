import { open } from "node:fs/promises";

/** Bytes a second of compressed voice takes at the least (32 kbit/s): what an unknown format's length is guessed at,
 * on the long side, so a budget is never undercounted by much. */
const GUESSED_BYTES_PER_SECOND = 4000;
/** The end of an Ogg file read for its last page. */
const TAIL_BYTES = 65_536;

/** How long a recording plays, for counting its transcription: exact for Ogg/Opus (voice notes) and WAV, read from
 * the file's own header and last page; any other format guessed from its size. */
export async function audioSeconds(path: string): Promise<number> {
  const file = await open(path, "r");
  try {
    const { size } = await file.stat();
    const head = Buffer.alloc(Math.min(size, 512));
    await file.read(head, 0, head.length, 0);
    if (head.toString("latin1", 0, 4) === "RIFF" && head.toString("latin1", 8, 12) === "WAVE" && head.length >= 32) {
      const byteRate = head.readUInt32LE(28);
      if (byteRate > 0) return Math.max(0, size - 44) / byteRate;
    }
    const opus = head.indexOf("OpusHead", 0, "latin1");
    if (head.toString("latin1", 0, 4) === "OggS" && opus >= 0 && opus + 12 <= head.length) {
      const tail = Buffer.alloc(Math.min(size, TAIL_BYTES));
      await file.read(tail, 0, tail.length, size - tail.length);
      const last = tail.lastIndexOf("OggS", tail.length, "latin1");
      if (last >= 0 && last + 14 <= tail.length) {
        // The last page's granule position counts 48 kHz samples, the encoder's pre-skip included.
        const samples = Number(tail.readBigInt64LE(last + 6)) - head.readUInt16LE(opus + 10);
        if (samples >= 0) return samples / 48_000;
      }
    }
    return size / GUESSED_BYTES_PER_SECOND;
  } finally {
    await file.close();
  }
}
