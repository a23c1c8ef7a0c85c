//! Quantities as messages print them: one decimal place, or a whole number where it is one.
//! Integer arithmetic only, so the core carries no float formatting (core's `flt2dec`, about
//! 13 KB of the module, issue 32).

/// `numerator / denominator` with one decimal place, rounded half up ("1.5", "2.0"). A zero
/// denominator prints "0.0".
pub fn tenths(numerator: u64, denominator: u64) -> String {
    let (n, d) = (u128::from(numerator), u128::from(denominator).max(1));
    let tenths = match denominator {
        0 => 0,
        _ => (n * 20 + d) / (2 * d),
    };
    format!("{}.{}", tenths / 10, tenths % 10)
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
