DROP TABLE cluster_nodes;
DROP TABLE clusters;
