/**
 * The record scanner's vocabulary (lib/json/records.js): where in the document it is (S_*), and
 * what the value it is inside is (V_*): a record of the items array, another value, a key, or
 * the top-level value itself.
 */

// Scanner states
export const S_TOP = 0 // before the top-level value
export const S_OBJ_FIRST = 1 // after `{`: a key or `}`
export const S_OBJ_KEY = 2 // after `,` in the top object: a key
export const S_COLON = 3 // after a key
export const S_MEMBER = 4 // after `:`: a member value
export const S_AFTER_MEMBER = 5 // `,` or `}`
export const S_ARR_FIRST = 6 // after the records array's `[`: a record or `]`
export const S_ARR_NEXT = 7 // after `,`: a record
export const S_AFTER_RECORD = 8 // `,` or `]`
export const S_VALUE = 9 // inside a value (record, other value or key)
export const S_END = 10 // after the top-level value: whitespace only

// What the value being scanned is
export const V_RECORD = 1
export const V_OTHER = 2
export const V_KEY = 3
export const V_TOP = 4
