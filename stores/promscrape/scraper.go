package promscrape

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// Scraper reads every node's exposition at one path over one HTTP client
// per node, through the endpoint's Dial as the store's status poller
// connects. It is a stores.MetricScraper, safe for concurrent use.
type Scraper struct {
	store   string // names the store in errors
	path    string
	metrics []Metric
	eps     []stores.Endpoint
	clients []*http.Client
}

// NewScraper prepares a client per endpoint, its transport made by
// transport from the endpoint's Dial; nothing is dialed yet. addr names a
// node's ClientAddr in errors ("client address", "HTTP address").
func NewScraper(store, path, addr string, eps []stores.Endpoint, ms []Metric, transport func(stores.DialFunc) http.RoundTripper) (*Scraper, error) {
	if len(eps) == 0 {
		return nil, errors.New(store + " metrics: no endpoints")
	}
	s := &Scraper{store: store, path: path, metrics: ms, eps: eps}
	for _, ep := range eps {
		if _, _, err := net.SplitHostPort(ep.ClientAddr); err != nil {
			return nil, fmt.Errorf("%s metrics: %s %s %q: %w", store, plan.NodeName(ep.Node), addr, ep.ClientAddr, err)
		}
		s.clients = append(s.clients, &http.Client{Transport: transport(ep.Dial)})
	}
	return s, nil
}

// Scrape reads node's (1-based) metrics. It is bounded by ctx, or by
// Timeout when ctx has no deadline. At is when the answer was read.
func (s *Scraper) Scrape(ctx context.Context, node int) (stores.MetricSnapshot, error) {
	i := stores.EndpointIndex(s.eps, node)
	if i < 0 {
		return stores.MetricSnapshot{}, fmt.Errorf("%s metrics: no endpoint of node %d", s.store, node)
	}
	ep := s.eps[i]
	values, err := Scrape(ctx, s.clients[i], "http://"+ep.ClientAddr+s.path, s.metrics)
	if err != nil {
		return stores.MetricSnapshot{}, fmt.Errorf("%s metrics of %s (%s): %w", s.store, plan.NodeName(ep.Node), ep.ClientAddr, err)
	}
	return stores.MetricSnapshot{At: time.Now(), Values: values}, nil
}

// Close drops idle connections; scrapes afterwards still work.
func (s *Scraper) Close() error {
	for _, c := range s.clients {
		c.CloseIdleConnections()
	}
	return nil
}
