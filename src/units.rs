//! Quantities as messages print them: one decimal place, or a whole number where it is one.
//! Integer arithmetic only, so the core carries no float formatting (core's `flt2dec`, about
//! 13 KB of the module, issue 32).

/// `numerator / denominator` with `places` decimal places (at most 9), rounded half up
/// (`fixed(3, 2, 1)` = "1.5"). A zero denominator prints zero.
///
/// Long division in u64: no u128 arithmetic (its division routine is 1 KB of the module, issue 32)
/// and exact for every u64 pair.
pub fn fixed(numerator: u64, denominator: u64, places: u32) -> String {
    let places = places.min(9) as usize;
    let (mut whole, mut rest) = match denominator {
        0 => (0, 0),
        d => (numerator / d, numerator % d),
    };
    let d = denominator.max(1);
    let mut digits = [0u8; 9];
    for digit in digits.iter_mut().take(places) {
        (*digit, rest) = next_digit(rest, d);
    }
    // Half up: what is left is at least half the denominator (`rest < d`, so no overflow).
    if rest >= d - rest {
        whole += carry(&mut digits[..places]);
    }
    let mut text = whole.to_string();
    if places > 0 {
        text.push('.');
        text.extend(
            digits[..places]
                .iter()
                .map(|&digit| char::from(b'0' + digit)),
        );
    }
    text
}

/// The next decimal digit of `rest / d` and the new remainder (`rest < d`): `10 × rest` taken
/// as ten additions reduced below `d`, so nothing overflows for any `d`.
fn next_digit(rest: u64, d: u64) -> (u8, u64) {
    let (mut digit, mut sum) = (0, 0);
    for _ in 0..10 {
        // sum + rest >= d exactly when sum >= d - rest (both are below d).
        if sum >= d - rest {
            sum -= d - rest;
            digit += 1;
        } else {
            sum += rest;
        }
    }
    (digit, sum)
}

/// Adds one in the last decimal place; 1 when it carries into the whole part.
fn carry(digits: &mut [u8]) -> u64 {
    for digit in digits.iter_mut().rev() {
        if *digit < 9 {
            *digit += 1;
            return 0;
        }
        *digit = 0;
    }
    1
}

/// [`fixed`] with one decimal place ("1.5", "2.0").
pub fn tenths(numerator: u64, denominator: u64) -> String {
    fixed(numerator, denominator, 1)
}

/// [`tenths`], but a whole number where the quotient is one ("2", "1.5").
pub fn whole_or_tenths(numerator: u64, denominator: u64) -> String {
    match denominator != 0 && numerator % denominator == 0 {
        true => (numerator / denominator).to_string(),
        false => tenths(numerator, denominator),
    }
}

#[cfg(test)]
mod tests {
    use super::{tenths, whole_or_tenths};

    #[test]
    fn one_decimal_rounded_half_up() {
        assert_eq!(tenths(1500, 1000), "1.5");
        assert_eq!(tenths(1049, 1000), "1.0");
        assert_eq!(tenths(1050, 1000), "1.1");
        assert_eq!(tenths(2 << 20, 1 << 20), "2.0");
        assert_eq!(tenths(u64::MAX, 3), "6148914691236517205.0");
    }

    #[test]
    fn three_places_pad_with_zeros() {
        assert_eq!(super::fixed(1_048_576, 1_048_576, 3), "1.000");
        assert_eq!(super::fixed(52_429, 1_048_576, 3), "0.050");
        assert_eq!(super::fixed(7, 2, 0), "4");
    }

    #[test]
    fn rounding_carries_through_nines_into_the_whole_part() {
        assert_eq!(super::fixed(19_999, 10_000, 3), "2.000");
        assert_eq!(
            super::fixed(19_999_999_995, 10_000_000_000, 9),
            "2.000000000"
        );
        assert_eq!(super::fixed(u64::MAX, u64::MAX - 1, 9), "1.000000000");
        assert_eq!(super::fixed(u64::MAX - 1, u64::MAX, 9), "1.000000000");
        assert_eq!(super::fixed(1, u64::MAX, 9), "0.000000000");
        assert_eq!(super::fixed(2, 3, 9), "0.666666667");
    }

    #[test]
    fn whole_quotients_can_print_without_a_decimal() {
        assert_eq!(whole_or_tenths(3 << 30, 1 << 30), "3");
        assert_eq!(whole_or_tenths(2_621_440, 1 << 20), "2.5");
        assert_eq!(whole_or_tenths(0, 7), "0");
    }

    #[test]
    fn a_zero_denominator_prints_zero_instead_of_failing() {
        assert_eq!(tenths(5, 0), "0.0");
        assert_eq!(whole_or_tenths(5, 0), "0.0");
    }
}
