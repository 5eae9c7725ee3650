//! Views on chip: which slices of a value held in an on-chip buffer are a part of its storage,
//! so that an instruction can read them where they lie, without a copy.
//!
//! A value fills the region its producer wrote row-major: its elements, in row-major order,
//! run through the region's positions (access dimensions, outermost first), each position
//! holding one unit of the buffer (`dtype[unit_dims]`); this is how the oracle writes and reads
//! a region. A slice of the value is then a region of the buffer exactly when its elements are
//! one contiguous run in that order that starts and ends on a boundary of the outermost access
//! dimension: whole positions of the inner dimensions, a range of the outermost.

use crate::isa::Buffer;
use crate::lang::Ty;

/// Where the slice `ranges` (`(lo, hi, stride)` per dimension) of a value of type `ty` lies,
/// when that value fills a region of extents `sizes` of `buffer`: `(offset, size)` per access
/// dimension, relative to the region; `None` when the slice is not such a region.
pub fn region_of_slice(ty: &Ty, ranges: &[(i64, i64, i64)], sizes: &[i64], buffer: &Buffer) -> Option<(Vec<i64>, Vec<i64>)> {
    let (&outer, inner) = sizes.split_first()?;
    if ranges.len() != ty.rank() || ranges.iter().any(|r| r.2 != 1 || r.0 < 0 || r.1 <= r.0) {
        return None;
    }
    let unit_bytes = buffer.unit_dims.iter().product::<i64>() * i64::from(buffer.dtype.bytes());
    let row_bytes = inner.iter().product::<i64>() * unit_bytes;
    if row_bytes <= 0 || outer * row_bytes != ty.bytes() {
        return None;
    }
    // The first dimension not taken whole: the ones before it are single indices, the ones
    // after it whole, so the slice is one contiguous run of elements.
    let split = ranges.iter().zip(&ty.shape).position(|(r, &n)| (r.0, r.1) != (0, n)).unwrap_or(ty.rank());
    let leading_single = ranges[..split.min(ranges.len())].iter().all(|r| r.1 - r.0 == 1);
    let trailing_whole = ranges.iter().zip(&ty.shape).skip(split + 1).all(|(r, &n)| (r.0, r.1) == (0, n));
    if !leading_single || !trailing_whole {
        return None;
    }
    let element_bytes = i64::from(ty.dtype.bytes());
    // Row-major stride (in bytes) of each dimension.
    let mut stride = vec![element_bytes; ty.rank()];
    for d in (0..ty.rank().saturating_sub(1)).rev() {
        stride[d] = stride[d + 1] * ty.shape[d + 1];
    }
    let start: i64 = ranges.iter().zip(&stride).map(|(r, s)| r.0 * s).sum();
    let len = match ranges.get(split) {
        Some(r) => (r.1 - r.0) * stride[split],
        None => ty.bytes(),
    };
    if start % row_bytes != 0 || len % row_bytes != 0 {
        return None;
    }
    let mut offset = vec![0; sizes.len()];
    offset[0] = start / row_bytes;
    let mut size = sizes.to_vec();
    size[0] = len / row_bytes;
    Some((offset, size))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::DType;

    fn buffer(access: &[i64], unit: &[i64], dtype: DType) -> Buffer {
        Buffer {
            name: "b".into(),
            access_dims: access.iter().map(|&d| Some(d)).collect(),
            unit_dims: unit.to_vec(),
            dtype,
        }
    }

    #[test]
    fn leading_rows_of_a_matrix_are_rows_of_its_region() {
        // bf16[96, 64] in 96 rows of 64 bf16: rows [32, 96) are rows 32.. of the region.
        let b = buffer(&[128], &[64], DType::BF16);
        let ty = Ty::new(DType::BF16, vec![96, 64]);
        let got = region_of_slice(&ty, &[(32, 96, 1), (0, 64, 1)], &[96], &b);
        assert_eq!(got, Some((vec![32], vec![64])));
    }

    #[test]
    fn a_value_wider_than_a_row_spans_several_rows_per_index() {
        // int8[4, 32] in rows of 16: each matrix row is two buffer rows.
        let b = buffer(&[1024], &[16], DType::S8);
        let ty = Ty::new(DType::S8, vec![4, 32]);
        assert_eq!(region_of_slice(&ty, &[(1, 3, 1), (0, 32, 1)], &[8], &b), Some((vec![2], vec![4])));
    }

    #[test]
    fn a_slice_that_is_not_whole_rows_is_no_region() {
        let b = buffer(&[128], &[64], DType::BF16);
        let ty = Ty::new(DType::BF16, vec![64, 64]);
        // Columns: not contiguous.
        assert_eq!(region_of_slice(&ty, &[(0, 64, 1), (0, 32, 1)], &[64], &b), None);
        // A strided slice.
        assert_eq!(region_of_slice(&ty, &[(0, 64, 2), (0, 64, 1)], &[64], &b), None);
        // A value that does not fill its region exactly.
        assert_eq!(region_of_slice(&ty, &[(0, 32, 1), (0, 64, 1)], &[65], &b), None);
        // Half a buffer row: int8[8, 8] in rows of 16.
        let narrow = buffer(&[64], &[16], DType::S8);
        let ty = Ty::new(DType::S8, vec![8, 8]);
        assert_eq!(region_of_slice(&ty, &[(1, 4, 1), (0, 8, 1)], &[4], &narrow), None);
        assert_eq!(region_of_slice(&ty, &[(2, 4, 1), (0, 8, 1)], &[4], &narrow), Some((vec![1], vec![1])));
    }

    #[test]
    fn single_leading_indices_then_a_range_are_contiguous() {
        // bf16[4, 64, 64] (a batch) in 256 rows: batch 2, rows [0, 64) is rows 128.. of it.
        let b = buffer(&[256], &[64], DType::BF16);
        let ty = Ty::new(DType::BF16, vec![4, 64, 64]);
        assert_eq!(
            region_of_slice(&ty, &[(2, 3, 1), (0, 64, 1), (0, 64, 1)], &[256], &b),
            Some((vec![128], vec![64]))
        );
        // Two batches and a row range: not contiguous.
        assert_eq!(region_of_slice(&ty, &[(1, 3, 1), (0, 32, 1), (0, 64, 1)], &[256], &b), None);
    }

    #[test]
    fn inner_access_dimensions_are_taken_whole() {
        // A 2-D region of 8 x 2 positions of 4 units: int32[8, 8] fills it; rows [2, 6) are
        // positions [2, 6) of the outer dimension, both inner positions.
        let b = buffer(&[64, 4], &[4], DType::S32);
        let ty = Ty::new(DType::S32, vec![8, 8]);
        assert_eq!(region_of_slice(&ty, &[(2, 6, 1), (0, 8, 1)], &[8, 2], &b), Some((vec![2, 0], vec![4, 2])));
    }
}
