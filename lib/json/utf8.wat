;; UTF-8 to UTF-16 for the parse threads (lib/json/utf8.js), for well-formed UTF-8 only: any
;; byte that is not (a stray or missing continuation, an overlong form, a surrogate, past U+10FFFF)
;; ends it with -1, and the caller decodes with Buffer#toString, whose replacement characters
;; are then the lab's as they always were. ASCII goes 16 bytes at a time.
(module
  (memory (export "memory") 1)

  ;; decode(src, len, dst) -> UTF-16 code units written at dst, or -1
  ;; dst has room for 2 * len + 32 bytes (16 bytes are widened at once, ASCII or not)
  (func (export "decode") (param $src i32) (param $len i32) (param $dst i32) (result i32)
    (local $end i32) (local $start i32) (local $v v128) (local $mask i32) (local $k i32)
    (local $c i32) (local $c1 i32) (local $c2 i32) (local $c3 i32) (local $cp i32)
    (local.set $end (i32.add (local.get $src) (local.get $len)))
    (local.set $start (local.get $dst))
    (block $invalid
      (block $done
        (loop $next
          ;; 16 bytes widened to 16 units; past the ASCII ones at their head
          (if (i32.le_u (i32.add (local.get $src) (i32.const 16)) (local.get $end))
            (then
              (local.set $v (v128.load align=1 (local.get $src)))
              (v128.store align=1 (local.get $dst) (i16x8.extend_low_i8x16_u (local.get $v)))
              (v128.store offset=16 align=1 (local.get $dst) (i16x8.extend_high_i8x16_u (local.get $v)))
              (local.set $mask (i8x16.bitmask (local.get $v)))
              (local.set $k (select (i32.const 16) (i32.ctz (local.get $mask)) (i32.eqz (local.get $mask))))
              (local.set $src (i32.add (local.get $src) (local.get $k)))
              (local.set $dst (i32.add (local.get $dst) (i32.shl (local.get $k) (i32.const 1))))
              (br_if $next (i32.eq (local.get $k) (i32.const 16)))))
          (br_if $done (i32.ge_u (local.get $src) (local.get $end)))
          (local.set $c (i32.load8_u (local.get $src)))
          (block $written
            (if (i32.lt_u (local.get $c) (i32.const 0x80))
              (then
                (i32.store16 (local.get $dst) (local.get $c))
                (local.set $src (i32.add (local.get $src) (i32.const 1)))
                (local.set $dst (i32.add (local.get $dst) (i32.const 2)))
                (br $written)))
            ;; a continuation byte, or C0 and C1 (overlong two-byte forms), cannot lead
            (br_if $invalid (i32.lt_u (local.get $c) (i32.const 0xc2)))
            (if (i32.lt_u (local.get $c) (i32.const 0xe0))
              (then
                (br_if $invalid (i32.lt_u (i32.sub (local.get $end) (local.get $src)) (i32.const 2)))
                (local.set $c1 (i32.load8_u offset=1 (local.get $src)))
                (br_if $invalid (i32.ne (i32.and (local.get $c1) (i32.const 0xc0)) (i32.const 0x80)))
                (i32.store16 (local.get $dst)
                  (i32.or (i32.shl (i32.and (local.get $c) (i32.const 0x1f)) (i32.const 6)) (i32.and (local.get $c1) (i32.const 0x3f))))
                (local.set $src (i32.add (local.get $src) (i32.const 2)))
                (local.set $dst (i32.add (local.get $dst) (i32.const 2)))
                (br $written)))
            (if (i32.lt_u (local.get $c) (i32.const 0xf0))
              (then
                (br_if $invalid (i32.lt_u (i32.sub (local.get $end) (local.get $src)) (i32.const 3)))
                (local.set $c1 (i32.load8_u offset=1 (local.get $src)))
                (local.set $c2 (i32.load8_u offset=2 (local.get $src)))
                (br_if $invalid (i32.ne (i32.and (i32.or (local.get $c1) (i32.shl (local.get $c2) (i32.const 8))) (i32.const 0xc0c0))
                                        (i32.const 0x8080)))
                ;; E0 needs A0 and up (else overlong), ED below A0 (else a surrogate)
                (br_if $invalid (i32.and (i32.eq (local.get $c) (i32.const 0xe0)) (i32.lt_u (local.get $c1) (i32.const 0xa0))))
                (br_if $invalid (i32.and (i32.eq (local.get $c) (i32.const 0xed)) (i32.ge_u (local.get $c1) (i32.const 0xa0))))
                (i32.store16 (local.get $dst)
                  (i32.or (i32.or (i32.shl (i32.and (local.get $c) (i32.const 0x0f)) (i32.const 12))
                                  (i32.shl (i32.and (local.get $c1) (i32.const 0x3f)) (i32.const 6)))
                          (i32.and (local.get $c2) (i32.const 0x3f))))
                (local.set $src (i32.add (local.get $src) (i32.const 3)))
                (local.set $dst (i32.add (local.get $dst) (i32.const 2)))
                (br $written)))
            ;; F0 to F4 lead four bytes; F5 and up would pass U+10FFFF
            (br_if $invalid (i32.ge_u (local.get $c) (i32.const 0xf5)))
            (br_if $invalid (i32.lt_u (i32.sub (local.get $end) (local.get $src)) (i32.const 4)))
            (local.set $c1 (i32.load8_u offset=1 (local.get $src)))
            (local.set $c2 (i32.load8_u offset=2 (local.get $src)))
            (local.set $c3 (i32.load8_u offset=3 (local.get $src)))
            (br_if $invalid (i32.ne
              (i32.and (i32.or (local.get $c1) (i32.or (i32.shl (local.get $c2) (i32.const 8)) (i32.shl (local.get $c3) (i32.const 16))))
                       (i32.const 0xc0c0c0))
              (i32.const 0x808080)))
            ;; F0 needs 90 and up (else overlong), F4 below 90 (else past U+10FFFF)
            (br_if $invalid (i32.and (i32.eq (local.get $c) (i32.const 0xf0)) (i32.lt_u (local.get $c1) (i32.const 0x90))))
            (br_if $invalid (i32.and (i32.eq (local.get $c) (i32.const 0xf4)) (i32.ge_u (local.get $c1) (i32.const 0x90))))
            (local.set $cp (i32.sub
              (i32.or (i32.or (i32.shl (i32.and (local.get $c) (i32.const 0x07)) (i32.const 18))
                              (i32.shl (i32.and (local.get $c1) (i32.const 0x3f)) (i32.const 12)))
                      (i32.or (i32.shl (i32.and (local.get $c2) (i32.const 0x3f)) (i32.const 6))
                              (i32.and (local.get $c3) (i32.const 0x3f))))
              (i32.const 0x10000)))
            ;; a surrogate pair
            (i32.store16 (local.get $dst) (i32.or (i32.const 0xd800) (i32.shr_u (local.get $cp) (i32.const 10))))
            (i32.store16 offset=2 (local.get $dst) (i32.or (i32.const 0xdc00) (i32.and (local.get $cp) (i32.const 0x3ff))))
            (local.set $src (i32.add (local.get $src) (i32.const 4)))
            (local.set $dst (i32.add (local.get $dst) (i32.const 4))))
          (br $next)))
      (return (i32.shr_u (i32.sub (local.get $dst) (local.get $start)) (i32.const 1))))
    (i32.const -1))
)
