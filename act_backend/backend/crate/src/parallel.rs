//! Searches over e-classes split across threads. Rules and patterns only read the e-graph and
//! each class's findings depend on that class alone, so the classes are cut into consecutive
//! chunks, one per thread, and the chunks' findings joined in chunk order: the same list, in
//! the same order, as one thread gives, whatever the number of threads.

use egg::Id;

/// Fewest classes worth a second thread: below this, starting threads costs more than the
/// search (a small kernel's whole search visits a few thousand classes).
pub const MIN_CLASSES_PER_THREAD: usize = 2_048;

/// Most threads one search uses.
pub const MAX_THREADS: usize = 8;

/// `search` run over `ids` as over consecutive chunks of them, each on a thread of its own
/// where there are enough classes; the findings in the order of `ids`.
pub fn search_chunks<T: Send>(ids: &[Id], search: impl Fn(&[Id]) -> Vec<T> + Sync) -> Vec<T> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cores.min(MAX_THREADS).min(ids.len() / MIN_CLASSES_PER_THREAD).max(1);
    if threads == 1 {
        return search(ids);
    }
    let chunk = ids.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let search = &search;
        let handles: Vec<_> = ids.chunks(chunk).map(|part| scope.spawn(move || search(part))).collect();
        // A panic in a search is a bug: it goes on as the panic it was.
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_give_the_findings_of_one_thread_in_the_same_order() {
        let ids: Vec<Id> = (0..20_000usize).map(Id::from).collect();
        // Two findings for some classes, none for others.
        let search = |part: &[Id]| -> Vec<(usize, u8)> {
            part.iter()
                .map(|&id| usize::from(id))
                .filter(|i| i % 3 != 0)
                .flat_map(|i| [(i, 0), (i, 1)])
                .collect()
        };
        assert_eq!(search_chunks(&ids, search), search(&ids));
        assert_eq!(search_chunks(&ids[..10], search), search(&ids[..10]));
        assert!(search_chunks(&[], search).is_empty());
    }
}
