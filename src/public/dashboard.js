// The dashboard works without this script; it adds copy buttons and confirmations.
document.addEventListener('click', async (event) => {
  const button = event.target.closest('[data-copy]');
  if (!button) return;
  const text = document.getElementById(button.dataset.copy).textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch {
    const range = document.createRange();
    range.selectNodeContents(document.getElementById(button.dataset.copy));
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    button.textContent = 'Selected: press Ctrl+C';
  }
});

document.addEventListener('submit', (event) => {
  const message = event.target.dataset.confirm;
  if (message && !confirm(message)) event.preventDefault();
});

// The review queue: C confirms, S skips, digits then Enter correct (the reading field has the focus).
// Each form is sent once: a key pressed again while the next item loads does nothing.
const review = document.querySelector('[data-review]');
if (review) {
  let sent = false;
  review.addEventListener('submit', (event) => {
    if (sent) event.preventDefault();
    sent = true;
  });
  document.addEventListener('keydown', (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    const key = event.key.toLowerCase();
    if (key === 'c') {
      event.preventDefault();
      document.getElementById('review-confirm')?.requestSubmit();
    } else if (key === 's') {
      event.preventDefault();
      if (!sent) {
        sent = true;
        document.getElementById('review-skip').click();
      }
    }
  });
  // A page the browser brings back from its history is not waiting on a sent form.
  window.addEventListener('pageshow', () => {
    sent = false;
  });
  document.getElementById('review-reading').focus();
}
