// Progressive enhancement for the operator console; every page works without it. A form with
// data-progress disables its button while the request runs and says what is happening, so a
// long action (a ledger check, a payout) shows progress and is not submitted twice.
document.addEventListener('submit', (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.progress) return;
  const button = form.querySelector('button[type="submit"], button:not([type])');
  if (!button) return;
  if (button.getAttribute('aria-busy') === 'true') {
    event.preventDefault();
    return;
  }
  button.setAttribute('aria-busy', 'true');
  const status = document.createElement('span');
  status.className = 'progress';
  status.setAttribute('role', 'status');
  status.textContent = form.dataset.progress;
  button.after(status);
});
