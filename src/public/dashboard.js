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
