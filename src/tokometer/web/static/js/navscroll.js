// The tab bar scrolls sideways on a phone: the page's own tab is brought into view, centred where
// the bar can scroll that far. Pure arithmetic on the boxes the browser measured, so a test runs it
// without one (tests/test_web_nav.py, in node).

/**
 * The bar's scrollLeft that centres the tab, clamped to what the bar can scroll.
 * Boxes are viewport coordinates (getBoundingClientRect), so the answer does not depend on which
 * element is the tab's offsetParent (the bug: offsetLeft counted from the header, not the bar).
 * @param {{left: number, width: number}} bar   the bar's box
 * @param {{left: number, width: number}} tab   the tab's box
 * @param {number} scrollLeft   the bar's scroll position when the boxes were measured
 * @param {number} scrollWidth  the bar's content width
 * @param {number} clientWidth  the bar's visible width
 */
export function centredScrollLeft(bar, tab, scrollLeft, scrollWidth, clientWidth) {
  const tabStart = tab.left - bar.left + scrollLeft; // the tab's left edge in the bar's content
  const wanted = tabStart - (clientWidth - tab.width) / 2;
  const most = Math.max(0, scrollWidth - clientWidth);
  return Math.min(most, Math.max(0, Math.round(wanted)));
}

/** Whether the tab is wholly visible in the bar (a one-pixel rounding allowed). */
export function wholeInView(bar, tab) {
  return tab.left >= bar.left - 1 && tab.left + tab.width <= bar.left + bar.width + 1;
}

/** Scroll `bar` so that `tab` is centred, now and again once fonts and layout have settled. */
export function showActiveTab(bar, tab) {
  if (!bar || !tab) return;
  const place = () => {
    if (bar.scrollWidth <= bar.clientWidth) return;
    bar.scrollLeft = centredScrollLeft(bar.getBoundingClientRect(), tab.getBoundingClientRect(), bar.scrollLeft, bar.scrollWidth, bar.clientWidth);
  };
  place();
  requestAnimationFrame(place);
  document.fonts?.ready?.then(place);
  addEventListener('load', place, { once: true });
}
