//! One sort for the whole core. std's sorts are generic: every element type and comparison
//! compiles its own copy of the sorting algorithm (59 copies, about 30 KB of the shipped module;
//! issue 32). Here the algorithm — a stable merge sort over positions — is compiled once, and a
//! caller only says how two of its elements compare.

use std::cmp::Ordering;

/// Sorts `items` by `compare`, keeping equal elements in the order they came (stable).
/// `compare` is `dyn`, for size: one copy per element type, not one per comparison.
pub fn sort_by<T>(items: &mut Vec<T>, compare: &dyn Fn(&T, &T) -> Ordering) {
    let order = {
        let items = &*items;
        positions(items.len(), &|a, b| match (items.get(a), items.get(b)) {
            (Some(a), Some(b)) => compare(a, b),
            _ => Ordering::Equal,
        })
    };
    // Moved into place by swaps that one non-generic [`permute`] works out: only the swap itself
    // is instantiated for every type sorted (issue 32).
    permute(&order, &mut |a, b| items.swap(a, b));
}

/// Puts the items at `order` (positions, each once) in that order, by swaps `swap(a, b)`: the
/// item bound for place `k` is found by following where earlier swaps moved it.
fn permute(order: &[usize], swap: &mut dyn FnMut(usize, usize)) {
    for (k, &first) in order.iter().enumerate() {
        let mut from = first;
        while from < k {
            from = order.get(from).copied().unwrap_or(k);
        }
        if from != k {
            swap(k, from);
        }
    }
}

/// Sorts `items` in their natural order and drops repeats.
pub fn sort_dedup<T: Ord>(items: &mut Vec<T>) {
    sort_by(items, &T::cmp);
    items.dedup();
}

/// The positions `0..n` in sorted order: a bottom-up merge sort, stable. A caller that only reads
/// its items in order uses it as it is (no copy of [`sort_by`] for their type).
pub fn positions(n: usize, compare: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut merged = order.clone();
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let middle = start.saturating_add(width).min(n);
            let end = middle.saturating_add(width).min(n);
            let left = order.get(start..middle).unwrap_or_default();
            let right = order.get(middle..end).unwrap_or_default();
            if let Some(into) = merged.get_mut(start..end) {
                merge(left, right, into, compare);
            }
            start = end;
        }
        std::mem::swap(&mut order, &mut merged);
        width = width.saturating_mul(2);
    }
    order
}

/// Merges the sorted runs `left` and `right` into `into` (as long as both together); on a tie
/// the left one comes first.
fn merge(
    left: &[usize],
    right: &[usize],
    into: &mut [usize],
    compare: &dyn Fn(usize, usize) -> Ordering,
) {
    let (mut left, mut right) = (left.iter().peekable(), right.iter().peekable());
    for slot in into {
        let next = match (left.peek(), right.peek()) {
            (Some(&&a), Some(&&b)) if compare(a, b) == Ordering::Greater => right.next(),
            (Some(_), _) => left.next(),
            (None, _) => right.next(),
        };
        if let Some(&at) = next {
            *slot = at;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_like_std_and_keeps_equal_elements_in_order() {
        let mut seed = 7u64;
        for len in 0..70 {
            let mut items: Vec<(u8, usize)> = (0..len)
                .map(|i| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    ((seed >> 60) as u8, i)
                })
                .collect();
            let mut expected = items.clone();
            expected.sort_by_key(|a| a.0);
            sort_by(&mut items, &|a, b| a.0.cmp(&b.0));
            assert_eq!(items, expected, "length {len}");
        }
    }

    #[test]
    fn sort_dedup_leaves_each_value_once_in_order() {
        let mut names = vec!["pve2", "pve1", "pve2", "pve3", "pve1"];
        sort_dedup(&mut names);
        assert_eq!(names, ["pve1", "pve2", "pve3"]);
    }
}
