MV.site({"n_runs":1,"convs":{"conv-26":"data/conv/conv-26.js"},"diff":null});
