//! The first placement tried for every allocation request, verified before it is used.
//!
//! CP-SAT finds placements where first fit does not, but optimising how tightly values pack
//! can take it its whole budget even on forty blocks, and its time grows with the number of
//! live values. This places the
//! same [`Request`] the way a linear-scan allocator would: block starts in order of the
//! moment their values appear, each at the lowest address that keeps it apart from every
//! block placed in the same buffer at an overlapping time, with every equality propagated
//! as soon as it has one unknown left (so addressing attributes, alignment multiples and
//! slacks follow from the starts, and a start that breaks one is skipped). Variables no
//! equality determines take the lowest value that keeps their equalities solvable. The
//! result is checked against every domain, equality and non-overlap condition; anything
//! short of that returns `None` and the caller asks CP-SAT. Iteration orders are fixed, so
//! the same request always gets the same placement.

use crate::alloc::Request;

/// Candidate starts tried per block before giving up on the greedy placement.
const TRIES_PER_BLOCK: usize = 4096;

/// Starts refused one after another, each one address further on, before the next ones are
/// tried at ever larger powers of two (see [`next_start`]).
const STEPS_OF_ONE: usize = 64;

/// The start to try after `at` was refused, the `refused`-th time for this block: the next
/// address at first, then the next multiple of twice the largest power of two dividing `at`.
/// Alignment conditions are powers of two: a 5-row tile in Gemmini's scratchpad starts at a
/// multiple of 256 elements, and after a busy block ending at an odd address one step at a
/// time took up to 255 refusals a gap, using up the tries on a few gaps (then CP-SAT placed a
/// 5x768x768 product in 55 s); steps of the lowest set bit reach the next multiple of every
/// power of two in turn, the lowest aligned start first.
fn next_start(at: i64, refused: usize) -> i64 {
    if refused < STEPS_OF_ONE || at <= 0 {
        at + 1
    } else {
        at + (1i64 << at.trailing_zeros())
    }
}

struct State<'a> {
    request: &'a Request,
    values: Vec<Option<i64>>,
    /// Per variable, the equalities that mention it.
    uses: Vec<Vec<usize>>,
}

impl State<'_> {
    /// Assigns `var = value` and everything that follows by propagation; on a contradiction
    /// undoes what it assigned and returns false.
    fn assign(&mut self, var: usize, value: i64) -> bool {
        let mut trail = Vec::new();
        if self.propagate(var, value, &mut trail) {
            true
        } else {
            for v in trail {
                self.values[v] = None;
            }
            false
        }
    }

    /// Values worth trying for the unassigned `var`, ascending.
    fn candidates(&self, var: usize) -> Vec<i64> {
        let domain = &self.request.variables[var];
        let mut out = vec![domain.lo];
        for &e in &self.uses[var] {
            let eq = &self.request.equalities[e];
            let mut sum = i128::from(eq.constant);
            let mut own = 0i128;
            let mut others = Vec::new();
            for &(u, coef) in &eq.terms {
                match (u == var, self.values[u]) {
                    (true, _) => own += i128::from(coef),
                    (false, Some(val)) => sum += i128::from(coef) * i128::from(val),
                    (false, None) => others.push((u, coef)),
                }
            }
            if let ([(u, coef)], true) = (others.as_slice(), own != 0) {
                let at_lowest = sum + i128::from(*coef) * i128::from(self.request.variables[*u].lo);
                if at_lowest % own == 0 {
                    out.extend(i64::try_from(-at_lowest / own).ok());
                }
            }
        }
        out.retain(|&x| x >= domain.lo && x <= domain.hi);
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Assigns the block start `var = value`, then settles every equality of it left with
    /// several unknowns by [`State::decompose`] (a flattened start into its per-dimension
    /// starts), so a start whose split breaks a domain is refused here, where the caller can
    /// try the next address, not after every block is placed. Undoes everything on failure.
    fn assign_start(&mut self, var: usize, value: i64) -> bool {
        let mut trail = Vec::new();
        let ok = self.propagate(var, value, &mut trail)
            && self.uses[var].clone().into_iter().all(|e| self.decompose(e, &mut trail));
        if !ok {
            for v in trail {
                self.values[v] = None;
            }
        }
        ok
    }

    /// Gives the unknowns of equality `e`, all of one sign, values that satisfy it: while several are open, the
    /// one of largest coefficient takes the quotient of what is left (clamped to its domain);
    /// propagation solves the last one exactly. This is the mixed-radix split of a row-major
    /// flattened start into its row and column starts.
    fn decompose(&mut self, e: usize, trail: &mut Vec<usize>) -> bool {
        loop {
            let eq = &self.request.equalities[e];
            let mut rest = -i128::from(eq.constant);
            let mut open: Vec<(usize, i64)> = Vec::new();
            for &(u, coef) in &eq.terms {
                match self.values[u] {
                    Some(val) => rest -= i128::from(coef) * i128::from(val),
                    None => open.push((u, coef)),
                }
            }
            // Fewer than two: propagation has settled it. Unknowns of both signs (an end and a
            // slack) are left to the end, when every block is placed.
            if open.len() < 2 || !(open.iter().all(|o| o.1 > 0) || open.iter().all(|o| o.1 < 0)) {
                return true;
            }
            let &(u, coef) = open
                .iter()
                .min_by_key(|&&(u, coef)| (std::cmp::Reverse(coef.unsigned_abs()), u))
                .expect("two or more open");
            let domain = &self.request.variables[u];
            let want = rest.div_euclid(i128::from(coef)).clamp(i128::from(domain.lo), i128::from(domain.hi));
            let Ok(x) = i64::try_from(want) else { return false };
            if !self.propagate(u, x, trail) {
                return false;
            }
        }
    }

    fn propagate(&mut self, var: usize, value: i64, trail: &mut Vec<usize>) -> bool {
        let mut queue = vec![(var, value)];
        while let Some((v, x)) = queue.pop() {
            match self.values[v] {
                Some(old) if old == x => continue,
                Some(_) => return false,
                None => {}
            }
            let domain = &self.request.variables[v];
            if x < domain.lo || x > domain.hi {
                return false;
            }
            self.values[v] = Some(x);
            trail.push(v);
            for &e in &self.uses[v] {
                let eq = &self.request.equalities[e];
                let mut sum = i128::from(eq.constant);
                let mut unknown: Option<(usize, i64)> = None;
                let mut open = 0;
                for &(u, coef) in &eq.terms {
                    match self.values[u] {
                        Some(val) => sum += i128::from(coef) * i128::from(val),
                        None => {
                            open += 1;
                            unknown = Some((u, coef));
                        }
                    }
                }
                match (open, unknown) {
                    (0, _) if sum != 0 => return false,
                    (1, Some((u, coef))) => {
                        // coef * u + sum == 0
                        if sum % i128::from(coef) != 0 {
                            return false;
                        }
                        let Ok(solved) = i64::try_from(-sum / i128::from(coef)) else { return false };
                        queue.push((u, solved));
                    }
                    _ => {}
                }
            }
        }
        true
    }
}

/// A placement of every variable of `request`, or `None` when the greedy pass does not find
/// one that [`verify`] accepts.
pub fn place(request: &Request) -> Option<Vec<i64>> {
    let count = request.variables.len();
    let mut uses = vec![Vec::new(); count];
    for (e, eq) in request.equalities.iter().enumerate() {
        for &(v, _) in &eq.terms {
            if v >= count {
                return None;
            }
            uses[v].push(e);
        }
    }
    let mut st = State { request, values: vec![None; count], uses };
    // Fixed variables first (kernel inputs and outputs in HBM).
    for (v, var) in request.variables.iter().enumerate() {
        if var.lo == var.hi && st.values[v].is_none() && !st.assign(v, var.lo) {
            return None;
        }
    }
    let mut order: Vec<usize> = (0..request.blocks.len()).collect();
    order.sort_by_key(|&b| (request.blocks[b].time.0, request.blocks[b].start));
    // Per buffer, the placed blocks still live: blocks come in order of their first instant,
    // so one that ended before this block began has ended for every later one too.
    let mut live: std::collections::HashMap<&str, Vec<usize>> = std::collections::HashMap::new();
    for b in order {
        let block = &request.blocks[b];
        let placed = live.entry(block.buffer.as_str()).or_default();
        placed.retain(|&p| request.blocks[p].time.1 > block.time.0);
        if st.values[block.start].is_none() {
            let var = &request.variables[block.start];
            // Busy address ranges of this buffer at overlapping times, sorted.
            let mut busy: Vec<(i64, i64)> = placed
                .iter()
                .map(|&p| &request.blocks[p])
                .filter(|p| p.time.0 < block.time.1 && block.time.0 < p.time.1)
                .filter_map(|p| st.values[p.start].map(|s| (s, s + p.size)))
                .collect();
            busy.sort_unstable();
            let mut at = var.lo;
            let mut done = false;
            let mut refused = 0;
            for _ in 0..TRIES_PER_BLOCK {
                if let Some(&(_, end)) = busy.iter().find(|&&(s, e)| s < at + block.size && at < e) {
                    at = end;
                    continue;
                }
                if at > var.hi || block.capacity.is_some_and(|c| at + block.size > c) {
                    break;
                }
                if st.assign_start(block.start, at) {
                    done = true;
                    break;
                }
                at = next_start(at, refused);
                refused += 1;
            }
            if !done {
                return None;
            }
        }
        live.entry(block.buffer.as_str()).or_default().push(b);
    }
    // What no start determined (slacks, the end of HBM in use): the lowest of the values that
    // put another unknown of one of its equalities at its own lowest, or its domain's lowest.
    for v in 0..count {
        if st.values[v].is_none() && !st.candidates(v).into_iter().any(|x| st.assign(v, x)) {
            return None;
        }
    }
    let values: Vec<i64> = st.values.into_iter().collect::<Option<Vec<i64>>>()?;
    verify(request, &values).ok()?;
    Some(values)
}

/// Checks `values` against every domain, equality, capacity and non-overlap condition of
/// `request`; the first one broken, named.
pub fn verify(request: &Request, values: &[i64]) -> Result<(), String> {
    if values.len() != request.variables.len() {
        return Err(format!("{} values for {} variables", values.len(), request.variables.len()));
    }
    for (var, &x) in request.variables.iter().zip(values) {
        if x < var.lo || x > var.hi {
            return Err(format!("{} = {x} is outside [{}, {}]", var.name, var.lo, var.hi));
        }
    }
    for (e, eq) in request.equalities.iter().enumerate() {
        let sum: i128 = eq.terms.iter().map(|&(v, c)| i128::from(c) * i128::from(values[v])).sum::<i128>()
            + i128::from(eq.constant);
        if sum != 0 {
            return Err(format!("equality {e} does not hold"));
        }
    }
    for b in &request.blocks {
        let (start, end) = (values[b.start], values[b.start] + b.size);
        if start < 0 || b.capacity.is_some_and(|c| end > c) {
            return Err(format!("a block of {} lies outside it", b.buffer));
        }
    }
    // Sweep each buffer along time: the blocks live at one moment must lie apart, so a block
    // that begins overlaps one of them only if it overlaps its neighbours by address among
    // them (pairs would be millions: a long program reuses the same addresses thousands of
    // times). Blocks empty in space or in time overlap nothing.
    let mut by_buffer: std::collections::BTreeMap<&str, Vec<usize>> = std::collections::BTreeMap::new();
    for (b, block) in request.blocks.iter().enumerate() {
        if block.size > 0 && block.time.0 < block.time.1 {
            by_buffer.entry(block.buffer.as_str()).or_default().push(b);
        }
    }
    for (buffer, mut blocks) in by_buffer {
        blocks.sort_by_key(|&b| (request.blocks[b].time.0, b));
        // Live blocks by address: start -> end; and by the moment they end.
        let mut live: std::collections::BTreeMap<i64, i64> = std::collections::BTreeMap::new();
        let mut ending: std::collections::BinaryHeap<std::cmp::Reverse<(i64, i64)>> = std::collections::BinaryHeap::new();
        for b in blocks {
            let block = &request.blocks[b];
            while let Some(&std::cmp::Reverse((end, start))) = ending.peek() {
                if end > block.time.0 {
                    break;
                }
                ending.pop();
                live.remove(&start);
            }
            let (start, end) = (values[block.start], values[block.start] + block.size);
            let before = live.range(..=start).next_back().is_some_and(|(_, &e)| e > start);
            let after = live.range(start..).next().is_some_and(|(&s, _)| s < end);
            if before || after {
                return Err(format!("two blocks of {buffer} overlap in space and time"));
            }
            live.insert(start, end);
            ending.push(std::cmp::Reverse((block.time.1, start)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::{Block, Equality, Limits, Variable};

    fn var(name: &str, lo: i64, hi: i64) -> Variable {
        Variable { name: name.into(), lo, hi }
    }

    fn block(start: usize, size: i64, time: (i64, i64)) -> Block {
        Block { buffer: "spad".into(), capacity: Some(64), start, size, time }
    }

    fn request(variables: Vec<Variable>, equalities: Vec<Equality>, blocks: Vec<Block>) -> Request {
        Request { variables, equalities, blocks, objective: Vec::new(), limits: Limits::default() }
    }

    #[test]
    fn values_live_together_get_disjoint_addresses_and_later_ones_reuse_freed_space() {
        let r = request(
            vec![var("a", 0, 48), var("b", 0, 48), var("c", 0, 48)],
            vec![],
            vec![block(0, 16, (0, 4)), block(1, 16, (1, 5)), block(2, 16, (5, 9))],
        );
        let values = place(&r).expect("placed");
        assert_eq!(values, [0, 16, 0]);
        verify(&r, &values).unwrap();
    }

    #[test]
    fn alignment_and_attribute_equalities_follow_from_the_starts() {
        // b's start is a multiple of 16 (b - 16 k == 0) and an attribute x equals b + 2.
        let r = request(
            vec![var("a", 0, 60), var("b", 0, 60), var("k", -10, 10), var("x", -100, 100)],
            vec![
                Equality { terms: vec![(1, 1), (2, -16)], constant: 0 },
                Equality { terms: vec![(3, 1), (1, -1)], constant: -2 },
            ],
            vec![block(0, 4, (0, 4)), block(1, 8, (1, 5))],
        );
        let values = place(&r).expect("placed");
        assert_eq!(values, [0, 16, 1, 18]);
    }

    #[test]
    fn after_some_refused_starts_the_next_multiples_of_larger_powers_of_two_are_tried() {
        assert_eq!(next_start(22782, 0), 22783);
        // 22782 = 2 * 11391: then 22784 = 89 * 256, the next multiple of 256, and 90 * 256.
        assert_eq!(next_start(22782, STEPS_OF_ONE), 22784);
        assert_eq!(next_start(22784, STEPS_OF_ONE), 23040);
    }

    #[test]
    fn an_aligned_start_far_past_the_busy_blocks_is_found() {
        // Forty live blocks of 81 end at 3,240; the last block starts at a multiple of 8,192
        // (b - 8192 k == 0). One address at a time, the tries ran out before 8,192.
        let count = 40;
        let mut variables: Vec<Variable> = (0..count).map(|i| var(&format!("v{i}"), 0, 1 << 20)).collect();
        variables.extend([var("b", 0, 1 << 20), var("k", 0, 1 << 12)]);
        let mut blocks: Vec<Block> = (0..count).map(|i| Block { capacity: None, ..block(i, 81, (0, 10)) }).collect();
        blocks.push(Block { capacity: None, ..block(count, 16, (1, 10)) });
        let r = request(variables, vec![Equality { terms: vec![(count, 1), (count + 1, -8192)], constant: 0 }], blocks);
        let values = place(&r).expect("placed");
        assert_eq!(values[count], 8192);
        verify(&r, &values).unwrap();
    }

    #[test]
    fn an_end_above_every_block_is_found_through_its_slacks() {
        // end - start_i - size_i - slack_i == 0, slacks >= 0: end is the highest block end.
        let r = request(
            vec![var("a", 0, 60), var("b", 0, 60), var("end", 0, 64), var("s0", 0, 64), var("s1", 0, 64)],
            vec![
                Equality { terms: vec![(2, 1), (0, -1), (3, -1)], constant: -8 },
                Equality { terms: vec![(2, 1), (1, -1), (4, -1)], constant: -8 },
            ],
            vec![block(0, 8, (0, 4)), block(1, 8, (1, 5))],
        );
        let values = place(&r).expect("placed");
        assert_eq!(values[2], 16);
    }

    #[test]
    fn a_flattened_start_is_split_into_rows_and_columns_or_moved_to_where_it_splits() {
        // A value of 8 columns in a buffer 16 wide: flat == 16 * row + col, col <= 8. The
        // first block ends at 3, where no column start <= 8 fits a row of 16 after it;
        // 16 * 0 + 3 does split, so the second block starts there (row 0, column 3).
        let r = request(
            vec![var("a", 0, 60), var("row", 0, 3), var("col", 0, 8), var("flat", 0, 56)],
            vec![Equality { terms: vec![(1, 16), (2, 1), (3, -1)], constant: 0 }],
            vec![block(0, 3, (0, 4)), block(3, 8, (1, 5))],
        );
        assert_eq!(place(&r).expect("placed"), [0, 0, 3, 3]);
        // The first block ending at 12: 12 is column 12 > 8, so the next start that splits
        // is 16 (row 1, column 0).
        let r = request(
            vec![var("a", 0, 60), var("row", 0, 3), var("col", 0, 8), var("flat", 0, 56)],
            vec![Equality { terms: vec![(1, 16), (2, 1), (3, -1)], constant: 0 }],
            vec![block(0, 12, (0, 4)), block(3, 8, (1, 5))],
        );
        assert_eq!(place(&r).expect("placed"), [0, 1, 0, 16]);
    }

    #[test]
    fn more_than_the_buffer_holds_at_once_is_left_to_the_solver() {
        let r = request(
            vec![var("a", 0, 64), var("b", 0, 64)],
            vec![],
            vec![block(0, 40, (0, 4)), block(1, 40, (1, 5))],
        );
        assert_eq!(place(&r), None);
    }

    #[test]
    fn verification_names_what_a_placement_breaks() {
        let r = request(vec![var("a", 0, 48), var("b", 0, 48)], vec![], vec![block(0, 16, (0, 4)), block(1, 16, (1, 5))]);
        assert!(verify(&r, &[0, 8]).unwrap_err().contains("overlap"));
        assert!(verify(&r, &[0, 50]).unwrap_err().contains("outside"));
        verify(&r, &[0, 32]).unwrap();
    }

    #[test]
    fn verification_finds_an_overlap_exactly_when_two_live_blocks_share_an_address() {
        let mut state = 3u64;
        let mut next = |bound: i64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 33) % bound as u64) as i64
        };
        for _ in 0..300 {
            let n = 1 + next(8) as usize;
            let blocks: Vec<Block> = (0..n)
                .map(|b| {
                    let t = next(10);
                    block(b, 1 + next(8), (t, t + 1 + next(5)))
                })
                .collect();
            let values: Vec<i64> = (0..n).map(|_| next(24)).collect();
            let pairwise = (0..n).any(|a| {
                (a + 1..n).any(|b| {
                    let (x, y) = (&blocks[a], &blocks[b]);
                    let space = values[a] < values[b] + y.size && values[b] < values[a] + x.size;
                    space && x.time.0 < y.time.1 && y.time.0 < x.time.1
                })
            });
            let vars = (0..n).map(|b| var(&format!("s{b}"), 0, 64)).collect();
            let r = request(vars, vec![], blocks);
            assert_eq!(verify(&r, &values).is_err(), pairwise, "{:?} at {values:?}", r.blocks);
        }
    }
}
