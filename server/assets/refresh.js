// Reloads the inbox every 30 seconds while it is shown and the person is
// not typing, so new tasks appear; the page works the same without it.
"use strict";
setInterval(function () {
  var busy = document.activeElement && /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
  if (document.visibilityState === "visible" && !busy) {
    window.location.reload();
  }
}, 30000);
