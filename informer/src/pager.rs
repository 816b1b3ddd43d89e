//! Lists a large collection in pages: client-go's `tools/pager.ListPager`.
//!
//! [`ListPager::list`] asks for pages of [`ListPager::page_size`] items (500 by default) and
//! joins them into one [`ObjectList`]:
//!
//! * a first page without a `continue` token is returned as it is (not paginated);
//! * follow-up pages are requested with the token and the limit only: `resourceVersion` and
//!   `resourceVersionMatch` are cleared (a server refuses them together with `continue`), the
//!   selectors are kept;
//! * the joined list carries the **first** page's resourceVersion, which is the snapshot every
//!   page was read at;
//! * if a follow-up page fails because the continue token expired (410, the snapshot was
//!   compacted away) and [`ListPager::full_list_if_expired`] is set (the default), the pager
//!   makes one unpaginated list at the originally requested resourceVersion and match.
//!
//! Items move from each page into the first page's vector: no object is copied.
//!
//! Bounded: a server that keeps answering with continue tokens (a bug, or a hostile server)
//! would otherwise keep the pager listing, and its memory growing, forever. The pager stops
//! with [`ListWatchError::TooLarge`] past [`ListPager::max_items`] items or
//! [`ListPager::max_pages`] pages, or when a page hands back the token it was asked with.
//! client-go's pager has no such bound.
//!
//! Where it differs from client-go: the pages come from a [`ListerWatcher`] rather than a
//! page function; there is no `EachListItem` (the reflector needs the whole list to replace
//! its store at once); an expired page is recognised by 410 with reason `Expired` or `Gone`
//! (client-go's pager checks `Expired` only, its reflector both); and the result says whether
//! it was paginated in a struct rather than a second return value.

use clientgo_apimachinery::ObjectList;
use clientgo_rest::ListParams;

use crate::listwatch::{ListWatchError, ListerWatcher};

/// The page size a [`ListPager`] uses unless told otherwise.
pub const DEFAULT_PAGE_SIZE: u32 = 500;

/// The most items a [`ListPager`] joins into one list by default: far above any one resource
/// of a cluster within Kubernetes' scalability limits.
pub const DEFAULT_MAX_ITEMS: usize = 10_000_000;

/// The most pages a [`ListPager`] requests for one list by default. A server may answer a
/// page with fewer items than its limit, even none (a selector that etcd filters), so pages
/// are bounded apart from items.
pub const DEFAULT_MAX_PAGES: usize = 100_000;

/// A list joined from pages, and whether it took more than one page.
#[derive(Debug, Clone, PartialEq)]
pub struct PagedList<T> {
    /// The whole list, with the first page's resourceVersion and no continue token.
    pub list: ObjectList<T>,
    /// Whether the server split it into pages (the first page had a continue token).
    pub paginated: bool,
}

/// Lists a collection in pages (client-go's `ListPager`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListPager {
    /// Items per page when the options set no positive limit; 0 lists everything in one
    /// response. Unsigned, so that a page size the pager computes is never negative; it is
    /// sent as the `limit` of [`ListParams`].
    pub page_size: u32,
    /// Whether an expired continue token falls back to one full list.
    pub full_list_if_expired: bool,
    /// The most items joined into one list ([`DEFAULT_MAX_ITEMS`]).
    pub max_items: usize,
    /// The most pages requested for one list ([`DEFAULT_MAX_PAGES`]).
    pub max_pages: usize,
}

impl Default for ListPager {
    fn default() -> Self {
        ListPager {
            page_size: DEFAULT_PAGE_SIZE,
            full_list_if_expired: true,
            max_items: DEFAULT_MAX_ITEMS,
            max_pages: DEFAULT_MAX_PAGES,
        }
    }
}

impl ListPager {
    /// A pager with the given page size (0: no paging) that falls back to a full list.
    pub fn with_page_size(page_size: u32) -> Self {
        ListPager {
            page_size,
            ..ListPager::default()
        }
    }

    /// Lists everything `options` selects through `lister`, page by page.
    ///
    /// `options.limit`, when set and positive, overrides the page size; 0 or a negative limit
    /// (which the API server would read as "no limit") is replaced by the page size.
    pub async fn list<T, L>(
        &self,
        lister: &L,
        mut options: ListParams,
    ) -> Result<PagedList<T>, ListWatchError>
    where
        L: ListerWatcher<T>,
    {
        if options.limit.is_none_or(|l| l <= 0) {
            options.limit = Some(i64::from(self.page_size)).filter(|&l| l > 0);
        }
        let requested_rv = options.resource_version.clone();
        let requested_match = options.resource_version_match.clone();
        let mut joined: Option<ObjectList<T>> = None;
        let mut pages = 0usize;
        loop {
            pages += 1;
            if pages > self.max_pages {
                return Err(ListWatchError::TooLarge(format!(
                    "more than {} pages, and the server still returns a continue token",
                    self.max_pages
                )));
            }
            let page = match lister.list(&options).await {
                Ok(page) => page,
                Err(error) => {
                    if !error.is_expired()
                        || !self.full_list_if_expired
                        || options.continue_token.is_none()
                    {
                        return Err(error);
                    }
                    tracing::debug!(%error, "continue token expired, listing everything at once");
                    options.limit = None;
                    options.continue_token = None;
                    options.resource_version = requested_rv;
                    options.resource_version_match = requested_match;
                    let list = lister.list(&options).await?;
                    return Ok(PagedList {
                        list,
                        paginated: joined.is_some(),
                    });
                }
            };
            let next = page.continue_token().map(str::to_owned);
            let Some(list) = joined.as_mut() else {
                if next.is_none() {
                    return Ok(PagedList {
                        list: page,
                        paginated: false,
                    });
                }
                let mut first = page;
                // Room for what the server says is left, bounded so a wrong count cannot
                // make us reserve more than a few pages' worth.
                let hint = first.metadata.remaining_item_count.unwrap_or(0).max(0);
                let bound = 4 * first.items.len().max(1);
                first
                    .items
                    .reserve(usize::try_from(hint).unwrap_or(usize::MAX).min(bound));
                joined = Some(first);
                options.continue_token = next;
                options.resource_version = None;
                options.resource_version_match = None;
                continue;
            };
            list.items.extend(page.items);
            if list.items.len() > self.max_items {
                return Err(ListWatchError::TooLarge(format!(
                    "more than {} items in {pages} pages",
                    self.max_items
                )));
            }
            match next {
                Some(token) if options.continue_token.as_deref() == Some(token.as_str()) => {
                    return Err(ListWatchError::TooLarge(format!(
                        "page {pages} handed back the continue token it was asked with"
                    )));
                }
                Some(token) => options.continue_token = Some(token),
                None => break,
            }
        }
        let mut list = joined.unwrap_or_default();
        list.metadata.continue_.clear();
        list.metadata.remaining_item_count = None;
        Ok(PagedList {
            list,
            paginated: true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clientgo_apimachinery::{ListMeta, Status, StatusReason};
    use clientgo_watch::Watch;
    use parking_lot::Mutex;
    use std::collections::VecDeque;

    type Page = Result<ObjectList<u32>, ListWatchError>;

    /// Answers list calls from a script and records their options.
    #[derive(Default)]
    struct Pages {
        script: Mutex<VecDeque<Page>>,
        calls: Mutex<Vec<ListParams>>,
    }

    impl Pages {
        fn new(pages: Vec<Page>) -> Self {
            Pages {
                script: Mutex::new(pages.into()),
                calls: Mutex::default(),
            }
        }
    }

    impl ListerWatcher<u32> for Pages {
        async fn list(&self, options: &ListParams) -> Result<ObjectList<u32>, ListWatchError> {
            self.calls.lock().push(options.clone());
            self.script.lock().pop_front().unwrap_or_else(|| {
                Err(Status::failure(500, StatusReason::InternalError, "no more pages").into())
            })
        }

        async fn watch(
            &self,
            _: &clientgo_rest::WatchParams,
        ) -> Result<Watch<u32>, ListWatchError> {
            Err(ListWatchError::Transport("not used".into()))
        }
    }

    fn page(items: Vec<u32>, rv: &str, next: &str) -> Page {
        Ok(ObjectList {
            metadata: ListMeta {
                resource_version: rv.into(),
                continue_: next.into(),
                remaining_item_count: (!next.is_empty()).then_some(2),
                ..ListMeta::default()
            },
            ..ObjectList::new(items)
        })
    }

    fn expired() -> Page {
        Err(Status::failure(410, StatusReason::Expired, "continue token expired").into())
    }

    fn opts(rv: Option<&str>, limit: Option<i64>, token: Option<&str>) -> ListParams {
        ListParams {
            label_selector: Some("app=web".into()),
            resource_version: rv.map(Into::into),
            resource_version_match: rv.map(|_| "NotOlderThan".into()),
            limit,
            continue_token: token.map(Into::into),
            ..ListParams::default()
        }
    }

    // TestListPager_List: a single page is returned as it is.
    #[tokio::test]
    async fn list_pager_list_single_page_is_not_paginated() {
        let pages = Pages::new(vec![page(vec![1, 2], "10", "")]);
        let got = ListPager::default()
            .list(&pages, opts(Some("0"), None, None))
            .await
            .unwrap();
        assert!(!got.paginated);
        assert_eq!(got.list.items, vec![1, 2]);
        assert_eq!(*pages.calls.lock(), vec![opts(Some("0"), Some(500), None)]);
    }

    // TestListPager_List: three pages are joined under the first page's resourceVersion;
    // follow-up requests carry only the token, the limit and the selectors.
    #[tokio::test]
    async fn list_pager_list_joins_pages_at_the_first_resource_version() {
        let pages = Pages::new(vec![
            page(vec![1, 2], "10", "c1"),
            page(vec![3, 4], "11", "c2"),
            page(vec![5], "12", ""),
        ]);
        let got = ListPager::with_page_size(2)
            .list(&pages, opts(Some("0"), None, None))
            .await
            .unwrap();
        assert!(got.paginated);
        assert_eq!(got.list.items, vec![1, 2, 3, 4, 5]);
        assert_eq!(got.list.resource_version(), "10");
        assert_eq!(got.list.continue_token(), None);
        assert_eq!(got.list.metadata.remaining_item_count, None);
        assert_eq!(
            *pages.calls.lock(),
            vec![
                opts(Some("0"), Some(2), None),
                opts(None, Some(2), Some("c1")),
                opts(None, Some(2), Some("c2")),
            ]
        );
    }

    // TestListPager_List: an explicit limit wins over the page size; page size 0 lists all.
    #[tokio::test]
    async fn explicit_limit_and_unlimited_page_size() {
        let pages = Pages::new((0..4).map(|_| page(vec![1], "5", "")).collect());
        ListPager::default()
            .list(&pages, opts(Some("5"), Some(7), None))
            .await
            .unwrap();
        ListPager::with_page_size(0)
            .list(&pages, opts(Some("5"), None, None))
            .await
            .unwrap();
        // A limit of 0 or below is no limit: the page size replaces it, none is sent.
        ListPager::default()
            .list(&pages, opts(Some("5"), Some(-3), None))
            .await
            .unwrap();
        ListPager::with_page_size(0)
            .list(&pages, opts(Some("5"), Some(0), None))
            .await
            .unwrap();
        let limits: Vec<_> = pages.calls.lock().iter().map(|c| c.limit).collect();
        assert_eq!(limits, [Some(7), None, Some(500), None]);
    }

    // TestListPager_List: an expired continue token → one full list at the original RV.
    #[tokio::test]
    async fn expired_continue_token_falls_back_to_a_full_list() {
        let pages = Pages::new(vec![
            page(vec![1, 2], "10", "c1"),
            expired(),
            page(vec![1, 2, 3, 4], "12", ""),
        ]);
        let got = ListPager::with_page_size(2)
            .list(&pages, opts(Some("10"), None, None))
            .await
            .unwrap();
        assert!(got.paginated, "the first page was paginated");
        assert_eq!(got.list.items, vec![1, 2, 3, 4]);
        assert_eq!(got.list.resource_version(), "12");
        assert_eq!(
            *pages.calls.lock(),
            vec![
                opts(Some("10"), Some(2), None),
                opts(None, Some(2), Some("c1")),
                opts(Some("10"), None, None),
            ]
        );
    }

    #[tokio::test]
    async fn expired_errors_that_cannot_fall_back_are_returned() {
        // On the first page (no continue token): the caller decides.
        let pages = Pages::new(vec![expired()]);
        let err = ListPager::default()
            .list(&pages, opts(Some("10"), None, None))
            .await
            .unwrap_err();
        assert!(err.is_expired());
        // With the fallback turned off.
        let pages = Pages::new(vec![page(vec![1], "10", "c1"), expired()]);
        let pager = ListPager {
            page_size: 1,
            full_list_if_expired: false,
            ..ListPager::default()
        };
        let err = pager
            .list(&pages, opts(None, None, None))
            .await
            .unwrap_err();
        assert!(err.is_expired());
        assert_eq!(pages.calls.lock().len(), 2);
        // Any other error on a follow-up page.
        let pages = Pages::new(vec![page(vec![1], "10", "c1")]);
        let err = ListPager::default()
            .list(&pages, opts(None, None, None))
            .await
            .unwrap_err();
        assert!(err.is_internal_error());
    }

    #[tokio::test]
    async fn absurd_remaining_item_count_is_harmless() {
        let mut first = page(vec![1], "1", "c").unwrap();
        first.metadata.remaining_item_count = Some(i64::MAX);
        let pages = Pages::new(vec![Ok(first), page(vec![2], "1", "")]);
        let got = ListPager::default()
            .list(&pages, ListParams::default())
            .await
            .unwrap();
        assert_eq!(got.list.items, vec![1, 2]);
        assert!(got.list.items.capacity() < 1000);
    }

    /// A server that never stops paginating: every page holds `per_page` items and a new
    /// continue token (or, with `same_token`, always the same one).
    struct Endless {
        per_page: u32,
        same_token: bool,
        calls: Mutex<u32>,
    }

    impl ListerWatcher<u32> for Endless {
        async fn list(&self, _: &ListParams) -> Result<ObjectList<u32>, ListWatchError> {
            let mut calls = self.calls.lock();
            *calls += 1;
            let token = if self.same_token {
                "again".to_owned()
            } else {
                format!("c{calls}")
            };
            page((0..self.per_page).collect(), "1", &token)
        }

        async fn watch(
            &self,
            _: &clientgo_rest::WatchParams,
        ) -> Result<Watch<u32>, ListWatchError> {
            Err(ListWatchError::Transport("not used".into()))
        }
    }

    fn endless(per_page: u32, same_token: bool) -> Endless {
        Endless {
            per_page,
            same_token,
            calls: Mutex::new(0),
        }
    }

    #[tokio::test]
    async fn a_server_that_never_stops_paginating_is_stopped_at_the_bounds() {
        let pager = ListPager {
            page_size: 100,
            max_items: 1_000,
            max_pages: 50,
            ..ListPager::default()
        };
        // Full pages: stopped past the item bound, after 11 pages.
        let server = endless(100, false);
        let error = pager
            .list(&server, ListParams::default())
            .await
            .unwrap_err();
        assert!(matches!(error, ListWatchError::TooLarge(_)), "{error}");
        assert!(
            error.to_string().contains("more than 1000 items"),
            "{error}"
        );
        assert_eq!(*server.calls.lock(), 11);
        // Empty pages: stopped at the page bound.
        let server = endless(0, false);
        let error = pager
            .list(&server, ListParams::default())
            .await
            .unwrap_err();
        assert!(error.to_string().contains("more than 50 pages"), "{error}");
        assert_eq!(*server.calls.lock(), 50);
        // The same token again: stopped at once.
        let server = endless(1, true);
        let error = pager
            .list(&server, ListParams::default())
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("handed back the continue token"),
            "{error}"
        );
        assert_eq!(*server.calls.lock(), 2);
        // The defaults bound it too.
        assert_eq!(
            (
                ListPager::default().max_items,
                ListPager::default().max_pages
            ),
            (DEFAULT_MAX_ITEMS, DEFAULT_MAX_PAGES)
        );
    }
}
