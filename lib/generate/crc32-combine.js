// CRC-32 without the bytes, for a gzip trailer of a bomb of repeated blocks, from the pieces' CRCs and lengths.
// CRC-32 arithmetic. A CRC is a polynomial over GF(2) in reflected bit order
// (bit 31 is x^0). Appending n zero bytes multiplies it by x^(8n) mod P, so
// crc(A + B) = crc(A) * x^(8 |B|) mod P  xor  crc(B).

const CRC_POLY = 0xEDB88320
const X0 = 0x80000000

/** a(x) * b(x) mod P(x), both reflected. */
function multModP (a, b) {
  let product = 0
  for (let bit = X0; bit !== 0; bit >>>= 1) {
    if (a & bit) product ^= b
    b = b & 1 ? (b >>> 1) ^ CRC_POLY : b >>> 1
  }
  return product >>> 0
}

/** x^(8 n) mod P: the operator that appends n zero bytes. */
function appendZerosOperator (n) {
  let result = X0
  let square = X0 >>> 8 // x^8: one byte
  while (n > 0) {
    if (n % 2 === 1) result = multModP(result, square)
    square = multModP(square, square)
    n = Math.floor(n / 2)
  }
  return result
}

/**
 * The CRC-32 of A followed by B, from crc(A), crc(B) and B's length.
 * @param {number} lengthB bytes
 */
export function crc32Combine (crcA, crcB, lengthB) {
  return (multModP(appendZerosOperator(lengthB), crcA) ^ crcB) >>> 0
}

/** The checksum of `times` copies of a block, by doubling (O(log times)), from its `combine` and the empty sum. */
export function repeatByDoubling (combine, empty, sum, length, times) {
  let result = empty
  let power = sum
  let powerLength = length
  while (times > 0) {
    if (times % 2 === 1) result = combine(result, power, powerLength)
    power = combine(power, power, powerLength)
    powerLength *= 2
    times = Math.floor(times / 2)
  }
  return result
}

/** The CRC-32 of `times` copies of a block. */
export function crc32Repeat (crc, length, times) {
  return repeatByDoubling(crc32Combine, 0, crc, length, times)
}
