//! Quantities as messages print them: one decimal place, or a whole number where it is one.
//! Integer arithmetic only, so the core carries no float formatting (core's `flt2dec`, about
//! 13 KB of the module, issue 32).

/// `numerator / denominator` with `places` decimal places (at most 9), rounded half up
/// (`fixed(3, 2, 1)` = "1.5"). A zero denominator prints zero.
pub fn fixed(numerator: u64, denominator: u64, places: u32) -> String {
    let places = places.min(9);
    let scale = 10u128.pow(places);
    let (n, d) = (u128::from(numerator), u128::from(denominator).max(1));
    let scaled = match denominator {
        0 => 0,
        _ => (n * scale * 2 + d) / (2 * d),
    };
    // Both parts fit in u64 (the whole part is at most `numerator`, the fraction below 10^9):
    // printed as u64, the module carries no u128 formatting (issue 32).
    let (whole, fraction) = ((scaled / scale) as u64, (scaled % scale) as u64);
    match places {
        0 => whole.to_string(),
        _ => format!("{whole}.{fraction:0width$}", width = places as usize),
    }
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
