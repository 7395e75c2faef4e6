;; The record cutter (lib/json/cutter.js): reads the inside of the records array 64 bytes at a
;; time, as simdjson's first stage does (masks of quotes, escapes, what lies inside strings and
;; brackets), from a point just after a record. It follows records while they have the shape the
;; record scanner (lib/json/records.js) would pass without a word: a bracketed record, white
;; space, one comma, white space, the next. It stops at the end of the last such record before
;; anything else (a scalar or string record, a stray byte, the array's end, a backslash outside a
;; string, nesting past the limit, the end of the bytes), so the scanner reads what follows.
;; Where the scanner would start a batch (at a record, none being gathered) and end one (after the
;; first record that brings it to the batch size) it writes an event, four i32s: kind (1 start,
;; 2 end), address, and the string bytes and brackets opened from `ptr` up to there.
(module
  (memory (export "memory") 2)
  ;; counted from ptr up to the end of the last record followed: string bytes, brackets opened
  (global $strings (export "strings") (mut i32) (i32.const 0))
  (global $opens (export "opens") (mut i32) (i32.const 0))
  ;; events written by the last call
  (global $events (export "events") (mut i32) (i32.const 0))

  ;; the 64 bytes at p: one bit per quote, backslash, opening and closing bracket
  ;; (c | 0x20 is '{' for '[' and '{', '}' for ']' and '}')
  (func $classify (param $p i32) (result i64 i64 i64 i64)
    (local $v v128) (local $w v128) (local $k i32) (local $shift i64)
    (local $q i64) (local $bs i64) (local $op i64) (local $cl i64)
    (local $quote v128) (local $backslash v128) (local $open v128) (local $close v128)
    (local.set $quote (i8x16.splat (i32.const 0x22)))
    (local.set $backslash (i8x16.splat (i32.const 0x5c)))
    (local.set $open (i8x16.splat (i32.const 0x7b)))
    (local.set $close (i8x16.splat (i32.const 0x7d)))
    (loop $lane
      (local.set $v (v128.load align=1 (i32.add (local.get $p) (local.get $k))))
      (local.set $w (v128.or (local.get $v) (i8x16.splat (i32.const 0x20))))
      (local.set $shift (i64.extend_i32_u (local.get $k)))
      (local.set $q (i64.or (local.get $q)
        (i64.shl (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (local.get $v) (local.get $quote)))) (local.get $shift))))
      (local.set $bs (i64.or (local.get $bs)
        (i64.shl (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (local.get $v) (local.get $backslash)))) (local.get $shift))))
      (local.set $op (i64.or (local.get $op)
        (i64.shl (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (local.get $w) (local.get $open)))) (local.get $shift))))
      (local.set $cl (i64.or (local.get $cl)
        (i64.shl (i64.extend_i32_u (i8x16.bitmask (i8x16.eq (local.get $w) (local.get $close)))) (local.get $shift))))
      (local.set $k (i32.add (local.get $k) (i32.const 16)))
      (br_if $lane (i32.lt_u (local.get $k) (i32.const 64))))
    (local.get $q) (local.get $bs) (local.get $op) (local.get $cl))

  ;; JSON's white space in 16 bytes: space, tab, line feed, carriage return
  (func $ws16 (param $v v128) (result i64)
    (i64.extend_i32_u (i8x16.bitmask
      (v128.or
        (v128.or (i8x16.eq (local.get $v) (i8x16.splat (i32.const 0x20))) (i8x16.eq (local.get $v) (i8x16.splat (i32.const 0x0a))))
        (v128.or (i8x16.eq (local.get $v) (i8x16.splat (i32.const 0x0d))) (i8x16.eq (local.get $v) (i8x16.splat (i32.const 0x09))))))))

  ;; the bits below bit k (k from 0 to 64)
  (func $below (param $k i32) (result i64)
    (if (result i64) (i32.ge_u (local.get $k) (i32.const 64))
      (then (i64.const -1))
      (else (i64.sub (i64.shl (i64.const 1) (i64.extend_i32_u (local.get $k))) (i64.const 1)))))

  ;; cut(ptr, len, target, batch, depth, out, room) -> bytes followed from ptr, ending after a record
  ;; target: where the batch being gathered reaches the batch size (an address), or -1 for none;
  ;; batch: the batch size; depth: the nesting a record may reach; room: events out may hold.
  ;; The caller keeps 64 bytes of memory after ptr + len.
  (func (export "cut") (param $ptr i32) (param $len i32) (param $target i32) (param $batch i32) (param $depth i32)
    (param $out i32) (param $room i32) (result i32)
    (local $p i32) (local $end i32) (local $pos i32) (local $mode i32) (local $level i32) (local $last i32) (local $n i32)
    (local $gathering i32) (local $stop i32) (local $k i32) (local $c i32) (local $at i32)
    (local $q i64) (local $bs i64) (local $esc i64) (local $fol i64) (local $odd i64) (local $seq i64) (local $pesc i64)
    (local $x i64) (local $instr i64) (local $op i64) (local $cl i64) (local $inner i64) (local $lim i64) (local $bad i64)
    (local $open i64) (local $close i64) (local $ev i64) (local $outside i64) (local $from i64) (local $upto i64)
    (local $strBase i32) (local $opBase i32) (local $lastStr i32) (local $lastOps i32)
    (local.set $p (local.get $ptr))
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    (local.set $last (local.get $ptr))
    (local.set $mode (i32.const 1)) ;; 0 in a record, 1 after one (a comma next), 2 after a comma (a record next)
    (local.set $gathering (i32.ge_s (local.get $target) (i32.const 0)))
    (block $done
      (loop $word
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (call $classify (local.get $p))
        (local.set $cl) (local.set $op) (local.set $bs) (local.set $q)
        ;; the escaped bytes: simdjson's find_escaped_branchless
        (if (i64.eqz (i64.or (local.get $bs) (local.get $pesc)))
          (then (local.set $esc (i64.const 0)))
          (else
            (local.set $bs (i64.and (local.get $bs) (i64.xor (local.get $pesc) (i64.const -1))))
            (local.set $fol (i64.or (i64.shl (local.get $bs) (i64.const 1)) (local.get $pesc)))
            (local.set $odd (i64.and (i64.and (local.get $bs) (i64.const 0xaaaaaaaaaaaaaaaa)) (i64.xor (local.get $fol) (i64.const -1))))
            (local.set $seq (i64.add (local.get $odd) (local.get $bs)))
            (local.set $pesc (i64.extend_i32_u (i64.lt_u (local.get $seq) (local.get $odd))))
            (local.set $esc (i64.and (i64.xor (i64.const 0x5555555555555555) (i64.shl (local.get $seq) (i64.const 1))) (local.get $fol)))))
        (local.set $q (i64.and (local.get $q) (i64.xor (local.get $esc) (i64.const -1))))
        ;; inside strings, from each opening quote up to its closing one: the quotes' prefix xor
        (local.set $x (local.get $q))
        (local.set $x (i64.xor (local.get $x) (i64.shl (local.get $x) (i64.const 1))))
        (local.set $x (i64.xor (local.get $x) (i64.shl (local.get $x) (i64.const 2))))
        (local.set $x (i64.xor (local.get $x) (i64.shl (local.get $x) (i64.const 4))))
        (local.set $x (i64.xor (local.get $x) (i64.shl (local.get $x) (i64.const 8))))
        (local.set $x (i64.xor (local.get $x) (i64.shl (local.get $x) (i64.const 16))))
        (local.set $x (i64.xor (local.get $x) (i64.shl (local.get $x) (i64.const 32))))
        (local.set $x (i64.xor (local.get $x) (local.get $instr)))
        (local.set $instr (i64.shr_s (local.get $x) (i64.const 63)))
        ;; the bytes that are there; a backslash outside strings ends them (the scanner reads it)
        (local.set $lim (call $below (i32.sub (local.get $end) (local.get $p))))
        (local.set $bad (i64.and (i64.and (local.get $bs) (i64.xor (local.get $x) (i64.const -1))) (local.get $lim)))
        (if (i64.ne (local.get $bad) (i64.const 0))
          (then
            (local.set $lim (i64.and (local.get $lim)
              (i64.sub (i64.and (local.get $bad) (i64.sub (i64.const 0) (local.get $bad))) (i64.const 1))))
            (local.set $stop (i32.const 1))))
        ;; brackets outside strings
        (local.set $op (i64.and (local.get $op) (i64.and (i64.xor (local.get $x) (i64.const -1)) (local.get $lim))))
        (local.set $cl (i64.and (local.get $cl) (i64.and (i64.xor (local.get $x) (i64.const -1)) (local.get $lim))))
        (local.set $inner (i64.and (i64.and (local.get $x) (i64.xor (local.get $q) (i64.const -1))) (local.get $lim)))
        (local.set $outside (i64.const 0))
        (local.set $pos (select (local.get $pos) (local.get $p) (i32.gt_u (local.get $pos) (local.get $p))))
        ;; this word's records and gaps, from pos
        (block $wordDone
          (loop $step
            (br_if $wordDone (i32.ge_u (local.get $pos) (i32.add (local.get $p) (i32.const 64))))
            (local.set $from (i64.shl (i64.const -1) (i64.extend_i32_u (i32.sub (local.get $pos) (local.get $p)))))
            (if (i32.eqz (local.get $mode))
              (then
                (local.set $open (i64.and (local.get $op) (local.get $from)))
                (local.set $close (i64.and (local.get $cl) (local.get $from)))
                ;; the record goes on past this word, within the nesting allowed: only its depth changes
                (if (i32.and
                      (i32.gt_s (local.get $level) (i32.wrap_i64 (i64.popcnt (local.get $close))))
                      (i32.le_s (i32.add (local.get $level) (i32.wrap_i64 (i64.popcnt (local.get $open)))) (local.get $depth)))
                  (then
                    (local.set $level (i32.add (local.get $level)
                      (i32.wrap_i64 (i64.sub (i64.popcnt (local.get $open)) (i64.popcnt (local.get $close))))))
                    (br $wordDone)))
                (local.set $ev (i64.or (local.get $open) (local.get $close)))
                (block $recordEnd
                  (loop $bracket
                    (br_if $wordDone (i64.eqz (local.get $ev)))
                    (local.set $k (i32.wrap_i64 (i64.ctz (local.get $ev))))
                    (local.set $ev (i64.and (local.get $ev) (i64.sub (local.get $ev) (i64.const 1))))
                    (if (i64.ne (i64.and (local.get $op) (i64.shl (i64.const 1) (i64.extend_i32_u (local.get $k)))) (i64.const 0))
                      (then
                        (local.set $level (i32.add (local.get $level) (i32.const 1)))
                        (br_if $done (i32.gt_s (local.get $level) (local.get $depth))))
                      (else
                        (local.set $level (i32.sub (local.get $level) (i32.const 1)))
                        (br_if $recordEnd (i32.eqz (local.get $level)))))
                    (br $bracket)))
                ;; a record ended after byte k: the scanner would end its batch here once it reaches the size
                (local.set $last (i32.add (local.get $p) (i32.add (local.get $k) (i32.const 1))))
                (local.set $upto (i64.shr_u (i64.const -1) (i64.extend_i32_u (i32.sub (i32.const 63) (local.get $k)))))
                (local.set $lastStr (i32.add (local.get $strBase)
                  (i32.wrap_i64 (i64.popcnt (i64.and (local.get $inner) (local.get $upto))))))
                (local.set $lastOps (i32.add (local.get $opBase)
                  (i32.wrap_i64 (i64.popcnt (i64.and (local.get $op) (local.get $upto))))))
                (if (i32.and (local.get $gathering) (i32.ge_s (local.get $last) (local.get $target)))
                  (then
                    (local.set $at (i32.add (local.get $out) (i32.shl (local.get $n) (i32.const 4))))
                    (i32.store (local.get $at) (i32.const 2))
                    (i32.store offset=4 (local.get $at) (local.get $last))
                    (i32.store offset=8 (local.get $at) (local.get $lastStr))
                    (i32.store offset=12 (local.get $at) (local.get $lastOps))
                    (local.set $n (i32.add (local.get $n) (i32.const 1)))
                    (local.set $gathering (i32.const 0))))
                (local.set $mode (i32.const 1))
                (local.set $pos (local.get $last))
                (br $step)))
            ;; between records: the next byte outside strings that is not white space
            (if (i64.eqz (local.get $outside))
              (then
                (local.set $outside (i64.and
                  (i64.xor
                    (i64.or
                      (i64.or (call $ws16 (v128.load align=1 (local.get $p)))
                              (i64.shl (call $ws16 (v128.load offset=16 align=1 (local.get $p))) (i64.const 16)))
                      (i64.or (i64.shl (call $ws16 (v128.load offset=32 align=1 (local.get $p))) (i64.const 32))
                              (i64.shl (call $ws16 (v128.load offset=48 align=1 (local.get $p))) (i64.const 48))))
                    (i64.const -1))
                  (local.get $lim)))))
            (local.set $ev (i64.and (local.get $outside) (local.get $from)))
            (br_if $wordDone (i64.eqz (local.get $ev)))
            (local.set $at (i32.add (local.get $p) (i32.wrap_i64 (i64.ctz (local.get $ev)))))
            (local.set $c (i32.load8_u (local.get $at)))
            (if (i32.eq (local.get $mode) (i32.const 1))
              (then
                (br_if $done (i32.ne (local.get $c) (i32.const 0x2c)))
                (local.set $mode (i32.const 2))
                (local.set $pos (i32.add (local.get $at) (i32.const 1)))
                (br $step)))
            ;; a record starts at a bracket; anything else is the scanner's
            (br_if $done (i32.ne (i32.or (local.get $c) (i32.const 0x20)) (i32.const 0x7b)))
            (if (i32.eqz (local.get $gathering))
              (then
                (br_if $done (i32.ge_u (i32.add (local.get $n) (i32.const 2)) (local.get $room)))
                (local.set $k (i32.add (local.get $out) (i32.shl (local.get $n) (i32.const 4))))
                (i32.store (local.get $k) (i32.const 1))
                (i32.store offset=4 (local.get $k) (local.get $at))
                (i32.store offset=8 (local.get $k) (local.get $lastStr))
                (i32.store offset=12 (local.get $k) (local.get $lastOps))
                (local.set $n (i32.add (local.get $n) (i32.const 1)))
                (local.set $gathering (i32.const 1))
                (local.set $target (i32.add (local.get $at) (local.get $batch)))))
            (local.set $mode (i32.const 0))
            (local.set $level (i32.const 0))
            (local.set $pos (local.get $at))
            (br $step)))
        (br_if $done (local.get $stop))
        (local.set $strBase (i32.add (local.get $strBase) (i32.wrap_i64 (i64.popcnt (local.get $inner)))))
        (local.set $opBase (i32.add (local.get $opBase) (i32.wrap_i64 (i64.popcnt (local.get $op)))))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (br $word)))
    ;; events past the last record followed (a batch started at a record left unfinished) are dropped
    (if (i32.gt_u (local.get $n) (i32.const 0))
      (then
        (if (i32.gt_u (i32.load offset=4 (i32.add (local.get $out) (i32.shl (i32.sub (local.get $n) (i32.const 1)) (i32.const 4))))
                      (local.get $last))
          (then (local.set $n (i32.sub (local.get $n) (i32.const 1)))))))
    (global.set $events (local.get $n))
    (global.set $strings (local.get $lastStr))
    (global.set $opens (local.get $lastOps))
    (i32.sub (local.get $last) (local.get $ptr)))
)
