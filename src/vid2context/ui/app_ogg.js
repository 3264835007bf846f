/**
 * Opus packets into an Ogg Opus file (RFC 7845 over RFC 3533), for the web app's upload: WebCodecs'
 * AudioEncoder gives bare Opus packets, and our upload route, ffmpeg and the hosted Whisper APIs
 * take Ogg Opus files. Nothing here encodes: it only frames.
 *
 * Layout: page 0 holds OpusHead alone (beginning of stream), page 1 OpusTags alone, then pages of
 * whole audio packets (at most PACKETS_PER_PAGE, so a page holds about a second at 20 ms a
 * packet), the last one flagged end of stream. A page's granule position is the 48 kHz sample
 * count at the end of its last packet, pre-skip included; the final one is cut to the real length
 * so a decoder drops the encoder's padding. Each page carries the CRC-32 of RFC 3533 (polynomial
 * 0x04c11db7, no reflection, initial value 0) computed with its CRC field zeroed.
 */

const PACKETS_PER_PAGE = 50;
const OGG_RATE = 48000;
const VENDOR = "vid2context web app";

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let r = i << 24;
    for (let j = 0; j < 8; j++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    table[i] = r >>> 0;
  }
  return table;
})();

/** RFC 3533's CRC-32 of `bytes`. */
export function oggCrc(bytes) {
  let crc = 0;
  for (let i = 0; i < bytes.length; i++) crc = ((crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ bytes[i]) & 0xff]) >>> 0;
  return crc >>> 0;
}

/** The OpusHead packet (RFC 7845 section 5.1): version 1, mapping family 0 (mono or stereo). */
export function opusHead(channels, preSkip, inputRate) {
  const head = new Uint8Array(19);
  const view = new DataView(head.buffer);
  head.set(new TextEncoder().encode("OpusHead"), 0);
  head[8] = 1;
  head[9] = channels;
  view.setUint16(10, preSkip, true);
  view.setUint32(12, inputRate, true);
  view.setInt16(16, 0, true);
  head[18] = 0;
  return head;
}

function opusTags() {
  const vendor = new TextEncoder().encode(VENDOR);
  const tags = new Uint8Array(8 + 4 + vendor.length + 4);
  const view = new DataView(tags.buffer);
  tags.set(new TextEncoder().encode("OpusTags"), 0);
  view.setUint32(8, vendor.length, true);
  tags.set(vendor, 12);
  view.setUint32(12 + vendor.length, 0, true);
  return tags;
}

function page(packets, granule, serial, sequence, flags) {
  const lacing = [];
  for (const packet of packets) {
    let left = packet.length;
    while (left >= 255) {
      lacing.push(255);
      left -= 255;
    }
    lacing.push(left);
  }
  if (lacing.length > 255) throw new RangeError("an Ogg page holds at most 255 lacing values");
  const size = packets.reduce((sum, p) => sum + p.length, 0);
  const out = new Uint8Array(27 + lacing.length + size);
  const view = new DataView(out.buffer);
  out.set([0x4f, 0x67, 0x67, 0x53], 0); // "OggS"
  out[4] = 0;
  out[5] = flags;
  view.setBigInt64(6, BigInt(granule), true);
  view.setUint32(14, serial, true);
  view.setUint32(18, sequence, true);
  view.setUint32(22, 0, true);
  out[26] = lacing.length;
  out.set(lacing, 27);
  let at = 27 + lacing.length;
  for (const packet of packets) {
    out.set(packet, at);
    at += packet.length;
  }
  view.setUint32(22, oggCrc(out), true);
  return out;
}

/**
 * An Ogg Opus file as a Blob from `packets`: [{data: Uint8Array, samples: number}], where samples is
 * the packet's length in 48 kHz samples. `head` is the encoder's OpusHead when it gave one (its
 * pre-skip is the encoder's), else one is made from `channels`, `preSkip` and `inputRate`.
 * `totalSamples` (48 kHz) is the audio's real length, to which the last granule is cut.
 */
export function muxOggOpus(packets, { channels = 1, preSkip = 312, inputRate = OGG_RATE, head = null, totalSamples = null } = {}) {
  const header = head && isOpusHead(head) ? head : opusHead(channels, preSkip, inputRate);
  const skip = new DataView(header.buffer, header.byteOffset, header.byteLength).getUint16(10, true);
  const serial = (Math.random() * 0xffffffff) >>> 0;
  const pages = [page([header], 0, serial, 0, 0x02), page([opusTags()], 0, serial, 1, 0)];
  const end = totalSamples === null ? Infinity : skip + totalSamples;
  let granule = skip;
  let sequence = 2;
  let group = [];
  let lacing = 0;
  packets.forEach((packet, index) => {
    group.push(packet.data);
    granule += packet.samples;
    lacing += Math.floor(packet.data.length / 255) + 1;
    const next = packets[index + 1];
    const last = next === undefined;
    if (last || group.length === PACKETS_PER_PAGE || lacing + Math.floor(next.data.length / 255) + 1 > 255) {
      pages.push(page(group, last ? Math.min(granule, end) : granule, serial, sequence++, last ? 0x04 : 0));
      group = [];
      lacing = 0;
    }
  });
  if (!packets.length) pages.push(page([], skip, serial, sequence, 0x04));
  return new Blob(pages, { type: "audio/ogg; codecs=opus" });
}

function isOpusHead(bytes) {
  return bytes.length >= 19 && new TextDecoder().decode(bytes.subarray(0, 8)) === "OpusHead";
}

/** RFC 7845's rate for granule positions, whatever rate the audio was encoded from. */
export const GRANULE_RATE = OGG_RATE;
