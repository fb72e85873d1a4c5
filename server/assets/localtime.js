// Shows each time of the page in the viewer's time zone, with the UTC
// time the server wrote kept beside it: "2026-12-03 09:44:00 Asia/Shanghai
// (01:44:00 UTC), the UTC date
// only where it is another day". Without this script the page shows UTC alone.
"use strict";
(function () {
  var zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";
  if (zone === "UTC" || zone === "Etc/UTC") {
    return; // the viewer's zone is UTC: the server's text says it already
  }
  var two = function (n) { return (n < 10 ? "0" : "") + n; };
  var times = document.querySelectorAll("time[datetime]");
  for (var i = 0; i < times.length; i++) {
    var el = times[i];
    var d = new Date(el.getAttribute("datetime"));
    if (isNaN(d.getTime())) {
      continue;
    }
    var utc = el.textContent;
    var local = d.getFullYear() + "-" + two(d.getMonth() + 1) + "-" + two(d.getDate()) + " " +
      two(d.getHours()) + ":" + two(d.getMinutes()) + ":" + two(d.getSeconds());
    el.textContent = local + " " + zone + " ";
    var beside = document.createElement("span");
    beside.className = "utc";
    // The UTC date is left out when it is the local date too.
    var sameDay = utc.indexOf(local.slice(0, 10)) === 0;
    beside.textContent = "(" + (sameDay ? utc.slice(11) : utc) + ")";
    el.appendChild(beside);
    el.title = utc;
  }
})();
