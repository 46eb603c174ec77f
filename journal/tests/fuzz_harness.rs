//! Runs the fuzz harnesses (`bk_journal::fuzz_support`, also behind
//! fuzz/fuzz_targets/journal_record.rs and journal_replay.rs) on random inputs with
//! the stable toolchain, so CI exercises them without cargo-fuzz.

use bk_journal::fuzz_support::{record_target, replay_target};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn record_decoders_never_panic(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        record_target(&data);
    }

    #[test]
    fn replay_never_panics(data in proptest::collection::vec(any::<u8>(), 0..2000)) {
        replay_target(&data);
    }

    #[test]
    fn replay_of_mostly_valid_groups(ops in proptest::collection::vec((0u8..5, any::<u8>(), any::<u8>()), 0..60)) {
        // Bias the script towards valid groups so the chain logic is exercised.
        let mut data = vec![3, 2];
        for (op, a, b) in ops {
            data.extend_from_slice(&[if op < 3 { 0 } else { op }, a, b, a, b]);
        }
        replay_target(&data);
    }
}
